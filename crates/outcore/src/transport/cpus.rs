//! The CPUs a thread may run on (Linux affinity), and the hand-over of a machine's CPUs to the
//! rank that writes a distributed job's results.
//!
//! `mpirun` binds each rank to its own core by default, and rayon sizes a rank's pool from that
//! binding, so a rank computes on the cores it was given and no more. Once the job's supersteps
//! are over, rank 0 alone formats and writes every vertex's result while the other ranks of its
//! machine only wait to finalise: on one machine with two cores, rank 0 wrote RMAT-22's 4.2 M
//! PageRank lines on one core in 0.64 s, where a single process (W = 1) writes them on two in
//! 0.35 s. [`cpus_for_results`] lends rank 0 the cores of the ranks on its machine for that last
//! stage; nothing else runs on them by then.

use super::Transport;
use crate::error::{Error, Result};

/// The CPUs the calling thread may run on, ascending; empty where the system cannot tell.
pub fn this_thread_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `set` is a plain bit set that sched_getaffinity fills; pid 0 is this thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return Vec::new();
            }
            (0..libc::CPU_SETSIZE as usize).filter(|&cpu| libc::CPU_ISSET(cpu, &set)).collect()
        }
    }
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

/// Lets the calling thread run on `cpus` (threads it starts afterwards inherit them).
pub fn allow_this_thread(cpus: &[usize]) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: as in `this_thread_cpus`; CPU_SET only touches bits below CPU_SETSIZE.
        let status = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &cpu in cpus.iter().filter(|&&cpu| cpu < libc::CPU_SETSIZE as usize) {
                libc::CPU_SET(cpu, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if status != 0 {
            return Err(Error::io(
                format!("allow this thread to run on CPUs {cpus:?}"),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpus;
        Ok(())
    }
}

/// This machine's name, as the ranks of a job compare it to find which of them share a machine.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

/// A collective, called by every rank once its share of the job is done: rank 0 gets the union
/// of the CPUs that the ranks on its machine (itself included) may run on, when that is more
/// than its own; every other rank, and rank 0 when it gains nothing, gets `None`.
pub fn cpus_for_results(transport: &dyn Transport) -> Result<Option<Vec<usize>>> {
    let own = this_thread_cpus();
    let host = host_name();
    let mut mine = (host.len() as u64).to_le_bytes().to_vec();
    mine.extend_from_slice(host.as_bytes());
    for &cpu in &own {
        mine.extend_from_slice(&(cpu as u64).to_le_bytes());
    }
    let Some(parts) = transport.gather(mine)? else { return Ok(None) };
    let mut union = own.clone();
    for (rank, part) in parts.iter().enumerate().skip(1) {
        let (their_host, cpus) = decode(part).ok_or_else(|| Error::Remote {
            rank: Some(rank),
            message: "a malformed list of CPUs for the results".into(),
        })?;
        if their_host == host {
            union.extend(cpus);
        }
    }
    union.sort_unstable();
    union.dedup();
    Ok((union.len() > own.len() && !own.is_empty()).then_some(union))
}

/// A thread pool for rank 0's last stage (formatting and writing the job's results) on the CPUs
/// of [`cpus_for_results`]; `None` on every other rank and where there is nothing to gain. A
/// collective: every rank calls it once its share of the job is done. Only the exchange can
/// fail: where the system refuses the wider CPUs or the threads, rank 0 writes on its own CPUs.
pub fn results_pool(transport: &dyn Transport) -> Result<Option<rayon::ThreadPool>> {
    let Some(cpus) = cpus_for_results(transport)? else { return Ok(None) };
    // The pool's threads inherit the CPUs of the thread that starts them.
    if allow_this_thread(&cpus).is_err() {
        return Ok(None);
    }
    Ok(rayon::ThreadPoolBuilder::new().num_threads(cpus.len()).thread_name(|i| format!("results-{i}")).build().ok())
}

/// (host name, CPUs) of one rank's contribution to [`cpus_for_results`].
fn decode(part: &[u8]) -> Option<(&str, Vec<usize>)> {
    let length = u64::from_le_bytes(part.get(..8)?.try_into().ok()?) as usize;
    let host = std::str::from_utf8(part.get(8..8usize.checked_add(length)?)?).ok()?;
    let cpus = part.get(8 + length..)?;
    if cpus.len() % 8 != 0 {
        return None;
    }
    Some((host, cpus.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()) as usize).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::InProcessTransport;

    #[test]
    fn rank_zero_gets_the_cpus_of_the_ranks_on_its_machine() {
        let all = this_thread_cpus();
        if all.len() < 2 {
            eprintln!("skipped: this machine lets the test run on {} CPU(s)", all.len());
            return;
        }
        // Each rank thread narrows itself to one CPU of its own, as mpirun's binding does.
        let outcomes = InProcessTransport::run(2, |t| {
            let cpu = all[t.rank()];
            allow_this_thread(&[cpu]).unwrap();
            assert_eq!(this_thread_cpus(), vec![cpu]);
            cpus_for_results(t)
        })
        .unwrap();
        assert_eq!(outcomes[0], Some(vec![all[0], all[1]]));
        assert_eq!(outcomes[1], None);
    }

    #[test]
    fn rank_zero_gains_nothing_when_it_may_already_run_everywhere() {
        let outcomes = InProcessTransport::run(3, |t| cpus_for_results(t)).unwrap();
        assert!(outcomes.iter().all(Option::is_none), "{outcomes:?}");
    }

    #[test]
    fn a_malformed_contribution_is_refused() {
        assert!(decode(&[1, 0]).is_none());
        let mut part = 3u64.to_le_bytes().to_vec();
        part.extend_from_slice(b"abc");
        part.extend_from_slice(&[7, 0, 0]);
        assert!(decode(&part).is_none());
        part.truncate(11);
        part.extend_from_slice(&5u64.to_le_bytes());
        assert_eq!(decode(&part), Some(("abc", vec![5])));
    }
}
