//! The MPI transport under a real `mpirun` (feature `mpi`; `make test` runs it).
//!
//! MPI initialises once per process, so each test re-runs this test binary under
//! `mpirun -n W`, selecting one `#[ignore]`d worker test that does the multi-rank work, and
//! checks the job's exit status and output (PLATFORM.md's pattern). Every mpirun has a
//! `timeout`, so a hang fails the test instead of blocking CI.
#![cfg(feature = "mpi")]

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use outcore::transport::{MpiTransport, ReduceOp, Transport};
use outcore::Error;

fn mpirun(ranks: usize, worker: &str) -> Output {
    let exe = std::env::current_exe().unwrap();
    Command::new("timeout")
        .args(["120", "mpirun", "--allow-run-as-root", "--oversubscribe", "-n", &ranks.to_string()])
        .arg(exe)
        .args(["--ignored", "--exact", worker, "--nocapture", "--test-threads=1"])
        .output()
        .expect("run mpirun (is openmpi-bin installed? scripts/install-deps.sh installs it)")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn messages_and_collectives_over_mpi() {
    for ranks in [2, 4] {
        let output = mpirun(ranks, "worker_messages_and_collectives");
        let all = text(&output);
        assert!(output.status.success(), "mpirun -n {ranks} failed:\n{all}");
        assert_eq!(all.matches("worker ok").count(), ranks, "{all}");
    }
}

#[test]
fn an_aborting_rank_ends_the_job_quickly_with_its_exit_code() {
    let started = Instant::now();
    let output = mpirun(3, "worker_rank_one_aborts");
    let all = text(&output);
    assert_eq!(output.status.code(), Some(65), "{all}");
    assert!(all.contains("rank 1 of 3") && all.contains("rank one found bad input"), "{all}");
    assert!(started.elapsed() < Duration::from_secs(100), "took {:?}", started.elapsed());
}

#[test]
fn a_panicking_rank_ends_the_job() {
    let output = mpirun(2, "worker_rank_zero_panics");
    let all = text(&output);
    assert!(!output.status.success() && output.status.code() != Some(124), "{all}");
    assert!(all.contains("rank 0 panicked"), "{all}");
}

#[test]
fn after_finish_messages_fail_and_an_abort_ends_only_its_rank() {
    let output = mpirun(2, "worker_finishes_then_rank_zero_fails");
    let all = text(&output);
    assert_eq!(output.status.code(), Some(65), "{all}");
    assert!(all.contains("rank 0 of 2") && all.contains("failed after the job ended"), "{all}");
    assert!(!all.contains("aborting the MPI job"), "{all}");
    assert_eq!(all.matches("finished ok").count(), 2, "{all}");
}

#[test]
#[ignore = "runs under mpirun, started by messages_and_collectives_over_mpi"]
fn worker_messages_and_collectives() {
    let t = MpiTransport::init().unwrap();
    let (rank, ranks) = (t.rank(), t.ranks());
    // Far above the eager limit, to every rank (itself included) before anyone receives: only a
    // buffered send gets through this.
    let big = 12 << 20;
    for to in 0..ranks {
        for i in 0..3u8 {
            let mut payload = vec![rank as u8; big];
            payload[0] = i;
            t.send(to, 3, payload).unwrap();
        }
    }
    let mut next = vec![0u8; ranks];
    for _ in 0..3 * ranks {
        let e = t.recv(3).unwrap();
        assert_eq!(e.payload.len(), big);
        assert_eq!(e.payload[0], next[e.from], "FIFO per sender and tag");
        assert!(e.payload[1..].iter().all(|&b| b == e.from as u8));
        next[e.from] += 1;
    }
    assert!(t.try_recv(3).unwrap().is_none());
    t.barrier().unwrap();
    for round in 0..100u64 {
        let sum = t.all_reduce_u64(round + rank as u64, ReduceOp::Sum).unwrap();
        assert_eq!(sum, ranks as u64 * round + (ranks * (ranks - 1) / 2) as u64);
    }
    assert_eq!(t.all_reduce_f64(rank as f64, ReduceOp::Max).unwrap(), (ranks - 1) as f64);
    let gathered = t.all_gather(vec![rank as u8; rank + 1]).unwrap();
    assert_eq!(gathered, (0..ranks).map(|r| vec![r as u8; r + 1]).collect::<Vec<_>>());
    let root = ranks - 1;
    let value = t.broadcast(root, if rank == root { b"from the last".to_vec() } else { Vec::new() }).unwrap();
    assert_eq!(value, b"from the last");
    println!("worker ok on rank {rank}");
}

#[test]
#[ignore = "runs under mpirun, started by an_aborting_rank_ends_the_job_quickly_with_its_exit_code"]
fn worker_rank_one_aborts() {
    let t = MpiTransport::init().unwrap();
    if t.rank() == 1 {
        std::thread::sleep(Duration::from_millis(200));
        t.abort(&Error::input("edges.txt", Some(3), "rank one found bad input"));
    }
    // The others wait for something that never comes: only the abort ends them.
    t.recv(9).unwrap();
}

#[test]
#[ignore = "runs under mpirun, started by a_panicking_rank_ends_the_job"]
fn worker_rank_zero_panics() {
    let t = MpiTransport::init().unwrap();
    if t.rank() == 0 {
        panic!("deliberate panic");
    }
    t.barrier().unwrap();
}

#[test]
#[ignore = "runs under mpirun, started by after_finish_messages_fail_and_an_abort_ends_only_its_rank"]
fn worker_finishes_then_rank_zero_fails() {
    let t = MpiTransport::init().unwrap();
    let (rank, ranks) = (t.rank(), t.ranks());
    t.send((rank + 1) % ranks, 4, vec![rank as u8]).unwrap();
    assert_eq!(t.recv(4).unwrap().from, (rank + ranks - 1) % ranks);
    // Waits for every rank, then finalises MPI; a second call does nothing.
    t.finish();
    t.finish();
    assert!(matches!(t.send((rank + 1) % ranks, 4, vec![1]), Err(Error::Remote { .. })));
    assert!(matches!(t.recv(4), Err(Error::Remote { .. })));
    println!("rank {rank} finished ok");
    if rank == 0 {
        // The others are gone: this rank alone exits, with the error's code.
        t.abort(&Error::input("out.txt", None, "failed after the job ended"));
    }
}
