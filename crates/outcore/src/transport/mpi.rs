//! One rank per MPI process (Open MPI through the `mpi` crate), for `mpirun -n W outcore ...`.
//!
//! All point-to-point traffic goes through one *progress thread* per process: `send` hands the
//! payload to it over a channel and returns at once (the buffered semantics of the trait, even
//! for messages far above MPI's eager limit, where a plain `MPI_Send` would wait for the matching
//! receive and two ranks sending to each other would deadlock); the thread starts `MPI_Isend`s,
//! completes them, and probes for incoming messages (`MPI_Improbe` + `MPI_Mrecv`, safe with many
//! threads) which it sorts into per-tag queues that `recv` waits on. Sends to this rank itself
//! skip MPI. MPI is initialised with `Threading::Multiple` anyway, so `abort` may call
//! `MPI_Abort` from whichever thread meets the failure.
//!
//! Failure: `abort` prints the rank's error and calls `MPI_Abort` on the world, which kills every
//! process of the job; mpirun exits with the error's exit code. A panic hook installed right after
//! initialisation does the same for panics, because an unwinding rank would otherwise run
//! `MPI_Finalize` while the others wait for it forever (PLATFORM.md).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use mpi::Threading;

use super::{check_send, exit_code_of, Envelope, Tag, Transport};
use crate::error::{Error, Result};

/// The longest the progress thread sleeps when there is nothing to do: how late it may notice
/// a message that has arrived. Every superstep waits on a few exchanges (totals through rank 0,
/// recoded ranks' offers), so this latency adds up per step, while the probing costs little:
/// on RMAT-22 pr x10 under `mpirun -n 2`, each rank's progress thread used 0.08-0.12 s of CPU
/// with 200 us and 0.11-0.12 s with 50 us. In one comparison of four alternated cold rounds the
/// job's median was 3 % lower with 50 us and 5 % higher with 1 ms than with 200 us (this
/// machine's noise is of that order; no worse, at least).
const IDLE_WAIT_MAX: Duration = Duration::from_micros(50);

/// The longest the progress thread sleeps between probes while it waits for the other ranks
/// to end the job: a slower rank may take seconds to get there (the CLI's rank 0 finishes
/// before it writes the results, but other callers may not), and a millisecond more at the end
/// of a job is nothing.
const FINAL_WAIT_MAX: Duration = Duration::from_millis(2);

/// This process's rank of an MPI job.
pub struct MpiTransport {
    rank: usize,
    ranks: usize,
    inbox: Arc<Inbox>,
    shutting_down: Arc<AtomicBool>,
    /// Until [`Transport::finish`] (or the drop) has ended the job's communication.
    live: Mutex<Option<Live>>,
}

/// What a rank needs while it communicates; taken out whole by `finish`.
struct Live {
    outgoing: Sender<Envelope>,
    progress: JoinHandle<()>,
    /// Finalises MPI when dropped: dropped after the progress thread has ended.
    universe: mpi::environment::Universe,
}

#[derive(Default)]
struct Inbox {
    queues: Mutex<HashMap<Tag, VecDeque<Envelope>>>,
    arrived: Condvar,
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, HashMap<Tag, VecDeque<Envelope>>> {
        self.queues.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn deliver(&self, envelope: Envelope) {
        self.lock().entry(envelope.tag).or_default().push_back(envelope);
        self.arrived.notify_all();
    }
}

impl MpiTransport {
    fn lock_live(&self) -> MutexGuard<'_, Option<Live>> {
        self.live.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// True when this process was started by `mpirun`/`mpiexec` (Open MPI or a PMI launcher);
    /// a process started alone runs as a single rank without MPI.
    pub fn launched_by_mpirun() -> bool {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"].iter().any(|v| std::env::var_os(v).is_some())
    }

    /// Initialises MPI (once per process) with `Threading::Multiple`, installs the panic hook that
    /// aborts the job, and starts the progress thread.
    pub fn init() -> Result<MpiTransport> {
        let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple)
            .ok_or_else(|| Error::invalid("MPI is already initialised in this process"))?;
        if threading != Threading::Multiple {
            return Err(Error::invalid(format!(
                "the MPI library grants only {threading:?} threading, the pregel engine needs Multiple"
            )));
        }
        let world = universe.world();
        let rank = world.rank() as usize;
        let ranks = world.size() as usize;
        install_abort_on_panic(rank);

        let inbox = Arc::new(Inbox::default());
        let shutting_down = Arc::new(AtomicBool::new(false));
        let (outgoing, to_send) = crossbeam_channel::unbounded();
        let progress = {
            let inbox = Arc::clone(&inbox);
            let shutting_down = Arc::clone(&shutting_down);
            std::thread::Builder::new()
                .name("mpi-progress".into())
                .spawn(move || progress_loop(&to_send, &inbox, &shutting_down))
                .map_err(|e| Error::io("start the MPI progress thread", e))?
        };
        Ok(MpiTransport {
            rank,
            ranks,
            inbox,
            shutting_down,
            live: Mutex::new(Some(Live { outgoing, progress, universe })),
        })
    }
}

fn install_abort_on_panic(rank: usize) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        if mpi::environment::is_initialized() && !mpi::environment::is_finalized() {
            stderr_line(&format!("outcore: rank {rank} panicked; aborting the MPI job"));
            SimpleCommunicator::world().abort(70);
        }
    }));
}

/// A send in flight: the request and the leaked buffer it reads from.
struct InFlight {
    request: Request<'static, [u8]>,
    buffer: *mut [u8],
}

fn progress_loop(to_send: &Receiver<Envelope>, inbox: &Inbox, shutting_down: &AtomicBool) {
    let world = SimpleCommunicator::world();
    let mut in_flight: Vec<InFlight> = Vec::new();
    let mut idle_wait = Duration::ZERO;
    let start = |envelope: Envelope, in_flight: &mut Vec<InFlight>| {
        let buffer: &'static mut [u8] = Box::leak(envelope.payload.into_boxed_slice());
        let pointer: *mut [u8] = buffer;
        let request = world.process_at_rank(envelope.from as i32).immediate_send_with_tag(
            StaticScope,
            &*buffer,
            envelope.tag as i32,
        );
        in_flight.push(InFlight { request, buffer: pointer });
    };
    loop {
        let mut busy = false;
        // Start the sends handed over (`from` carries the destination here).
        while let Ok(envelope) = to_send.try_recv() {
            start(envelope, &mut in_flight);
            busy = true;
        }
        busy |= complete_sends(&mut in_flight);
        busy |= receive_arrived(&world, inbox);
        if shutting_down.load(Ordering::Acquire) && in_flight.is_empty() && to_send.is_empty() {
            break;
        }
        if busy {
            idle_wait = Duration::ZERO;
            continue;
        }
        idle_wait = (idle_wait * 2).clamp(Duration::from_micros(5), IDLE_WAIT_MAX);
        match to_send.recv_timeout(idle_wait) {
            Ok(envelope) => {
                start(envelope, &mut in_flight);
                idle_wait = Duration::ZERO;
            }
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {}
        }
    }
    // Every rank's sends have completed once all have reached this barrier; keep receiving
    // meanwhile so that nothing a slower rank sends is left unmatched at MPI_Finalize. The wait
    // may be long (a slower rank is still computing), so it backs off to FINAL_WAIT_MAX between
    // probes instead of spinning.
    let mut barrier = world.immediate_barrier();
    let mut wait = Duration::from_micros(50);
    loop {
        receive_arrived(&world, inbox);
        match barrier.test() {
            Ok(_) => break,
            Err(pending) => barrier = pending,
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(FINAL_WAIT_MAX);
    }
}

/// Frees the buffers of completed sends; true when any completed.
fn complete_sends(in_flight: &mut Vec<InFlight>) -> bool {
    let before = in_flight.len();
    let mut still = Vec::with_capacity(before);
    for send in in_flight.drain(..) {
        match send.request.test() {
            Ok(_) => {
                // SAFETY: `buffer` came from `Box::leak` in `start`, and MPI no longer reads it now
                // that its request has completed; nothing else refers to it.
                drop(unsafe { Box::from_raw(send.buffer) });
            }
            Err(request) => still.push(InFlight { request, buffer: send.buffer }),
        }
    }
    *in_flight = still;
    in_flight.len() != before
}

/// Moves every message that has arrived into the inbox; true when any did.
fn receive_arrived(world: &SimpleCommunicator, inbox: &Inbox) -> bool {
    let mut any = false;
    while let Some(probed) = world.any_process().immediate_matched_probe() {
        let (payload, status) = probed.matched_receive_vec::<u8>();
        inbox.deliver(Envelope { from: status.source_rank() as usize, tag: status.tag() as Tag, payload });
        any = true;
    }
    any
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn send(&self, to: usize, tag: Tag, payload: Vec<u8>) -> Result<()> {
        check_send(self, to, tag)?;
        if to == self.rank {
            self.inbox.deliver(Envelope { from: self.rank, tag, payload });
            return Ok(());
        }
        if payload.len() > i32::MAX as usize {
            return Err(Error::invalid(format!("message of {} bytes is above MPI's 2 GiB limit", payload.len())));
        }
        let ended = || Error::Remote { rank: Some(self.rank), message: "the MPI progress thread has ended".into() };
        let live = self.lock_live();
        let outgoing = &live.as_ref().ok_or_else(ended)?.outgoing;
        // `from` carries the destination on the way to the progress thread.
        outgoing.send(Envelope { from: to, tag, payload }).map_err(|_| ended())
    }

    fn recv(&self, tag: Tag) -> Result<Envelope> {
        let mut queues = self.inbox.lock();
        loop {
            if let Some(envelope) = queues.get_mut(&tag).and_then(VecDeque::pop_front) {
                return Ok(envelope);
            }
            if self.lock_live().as_ref().map_or(true, |live| live.progress.is_finished()) {
                return Err(Error::Remote {
                    rank: Some(self.rank),
                    message: "the MPI progress thread has ended".into(),
                });
            }
            queues = self
                .inbox
                .arrived
                .wait_timeout(queues, Duration::from_millis(100))
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    fn try_recv(&self, tag: Tag) -> Result<Option<Envelope>> {
        Ok(self.inbox.lock().get_mut(&tag).and_then(VecDeque::pop_front))
    }

    fn abort(&self, error: &Error) {
        if mpi::environment::is_finalized() {
            // After `finish` the other ranks are done: this process alone ends, with the error.
            stderr_line(&format!("outcore: rank {} of {}: {error}", self.rank, self.ranks));
            std::process::exit(exit_code_of(error));
        }
        stderr_line(&format!("outcore: rank {} of {}: {error}; aborting the MPI job", self.rank, self.ranks));
        SimpleCommunicator::world().abort(exit_code_of(error));
    }

    /// Waits for every rank at the final barrier and calls `MPI_Finalize`. Must run on the
    /// thread that initialised MPI (the CLI's main thread).
    fn finish(&self) {
        let Some(live) = self.lock_live().take() else { return };
        self.shutting_down.store(true, Ordering::Release);
        drop(live.outgoing);
        let _ = live.progress.join();
        drop(live.universe);
    }
}

/// Writes `line` and a newline to stderr in one write. `eprintln!` writes each formatted piece
/// separately and mpirun forwards each piece as it comes, so Open MPI's abort banner from
/// another rank could otherwise land in the middle of the line.
fn stderr_line(line: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), format!("{line}\n").as_bytes());
}

impl Drop for MpiTransport {
    /// Ends the job's communication unless `finish` has: dropped on the thread that
    /// initialised MPI, as `MPI_Finalize` must be.
    fn drop(&mut self) {
        self.finish();
    }
}
