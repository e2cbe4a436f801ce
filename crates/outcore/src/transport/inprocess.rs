//! Ranks as threads of one process.
//!
//! [`InProcessTransport::run`] starts W threads, gives each its own transport handle and runs the
//! same closure on all of them, like `mpirun -n W` runs one program W times. Messages are moved
//! (never copied) into the receiver's mailbox: one queue per tag, so FIFO per sender and tag holds.
//!
//! Failure handling is the point of this implementation as much as the messages: when a rank's
//! closure returns an error or panics, the job is marked failed and every rank blocked in `recv`
//! (or receiving later) gets [`Error::Remote`], so a test of a failing rank ends instead of
//! hanging. `run` then returns the first failing rank's own error.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::{check_send, Envelope, Tag, Transport};
use crate::error::{Error, Result};

/// One rank's handle on an in-process job. `Send + Sync`: the rank's threads share it.
pub struct InProcessTransport {
    rank: usize,
    job: Arc<Job>,
}

struct Job {
    ranks: usize,
    state: Mutex<JobState>,
    /// Signalled on every delivery and on failure.
    changed: Condvar,
}

struct JobState {
    /// `mailboxes[rank][tag]`: messages waiting to be received.
    mailboxes: Vec<HashMap<Tag, VecDeque<Envelope>>>,
    /// The first failure: the failing rank and what happened.
    failure: Option<(usize, String)>,
}

impl Job {
    fn lock(&self) -> MutexGuard<'_, JobState> {
        // A panic while holding the lock cannot leave the mailboxes inconsistent (every
        // critical section is a push, a pop or setting `failure`), so poisoning is ignored.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn fail(&self, rank: usize, message: String) {
        let mut state = self.lock();
        if state.failure.is_none() {
            state.failure = Some((rank, message));
        }
        drop(state);
        self.changed.notify_all();
    }
}

impl InProcessTransport {
    /// Runs `rank_main` on `ranks` threads, one per rank, and returns their results by rank.
    /// If any rank fails (error or panic), the others' `recv`s fail too and the first failing
    /// rank's error is returned.
    pub fn run<T, F>(ranks: usize, rank_main: F) -> Result<Vec<T>>
    where
        T: Send,
        F: Fn(&InProcessTransport) -> Result<T> + Sync,
    {
        if ranks == 0 {
            return Err(Error::invalid("a distributed run needs at least one rank"));
        }
        let job = Arc::new(Job {
            ranks,
            state: Mutex::new(JobState { mailboxes: vec![HashMap::new(); ranks], failure: None }),
            changed: Condvar::new(),
        });
        let outcomes: Vec<std::thread::Result<Result<T>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..ranks)
                .map(|rank| {
                    let transport = InProcessTransport { rank, job: Arc::clone(&job) };
                    let rank_main = &rank_main;
                    std::thread::Builder::new()
                        .name(format!("rank-{rank}"))
                        .spawn_scoped(scope, move || {
                            let outcome =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rank_main(&transport)));
                            match &outcome {
                                Ok(Ok(_)) => {}
                                Ok(Err(error)) => transport.job.fail(rank, error.to_string()),
                                Err(panic) => transport.job.fail(rank, panic_message(panic.as_ref())),
                            }
                            outcome
                        })
                        .expect("spawn a rank thread")
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(Err)).collect()
        });

        let first_failure = job.lock().failure.clone();
        let mut results = Vec::with_capacity(ranks);
        let mut errors: Vec<Option<Error>> = Vec::with_capacity(ranks);
        for outcome in outcomes {
            match outcome {
                Ok(Ok(value)) => {
                    results.push(value);
                    errors.push(None);
                }
                Ok(Err(error)) => errors.push(Some(error)),
                Err(panic) => errors.push(Some(Error::Remote { rank: None, message: panic_message(panic.as_ref()) })),
            }
        }
        match first_failure {
            None => Ok(results),
            Some((rank, message)) => match errors.get_mut(rank).and_then(Option::take) {
                // The failing rank's own error, unless it panicked (then the panic message).
                Some(Error::Remote { rank: None, message }) => Err(Error::Remote { rank: Some(rank), message }),
                Some(error) => Err(error),
                // A rank that called `abort` and then returned normally.
                None => Err(Error::Remote { rank: Some(rank), message }),
            },
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    format!("panicked: {text}")
}

impl Transport for InProcessTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.job.ranks
    }

    fn send(&self, to: usize, tag: Tag, payload: Vec<u8>) -> Result<()> {
        check_send(self, to, tag)?;
        let mut state = self.job.lock();
        if let Some((rank, message)) = &state.failure {
            return Err(Error::Remote { rank: Some(*rank), message: message.clone() });
        }
        state.mailboxes[to].entry(tag).or_default().push_back(Envelope { from: self.rank, tag, payload });
        drop(state);
        self.job.changed.notify_all();
        Ok(())
    }

    fn recv(&self, tag: Tag) -> Result<Envelope> {
        let mut state = self.job.lock();
        loop {
            if let Some((rank, message)) = &state.failure {
                return Err(Error::Remote { rank: Some(*rank), message: message.clone() });
            }
            if let Some(envelope) = state.mailboxes[self.rank].get_mut(&tag).and_then(VecDeque::pop_front) {
                return Ok(envelope);
            }
            state = self.job.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    fn try_recv(&self, tag: Tag) -> Result<Option<Envelope>> {
        let mut state = self.job.lock();
        if let Some((rank, message)) = &state.failure {
            return Err(Error::Remote { rank: Some(*rank), message: message.clone() });
        }
        Ok(state.mailboxes[self.rank].get_mut(&tag).and_then(VecDeque::pop_front))
    }

    fn abort(&self, error: &Error) {
        self.job.fail(self.rank, error.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::ReduceOp;
    use std::time::{Duration, Instant};

    #[test]
    fn messages_arrive_in_order_per_sender_and_tag() {
        let received = InProcessTransport::run(3, |t| {
            for to in 0..t.ranks() {
                for i in 0..100u8 {
                    t.send(to, 7, vec![t.rank() as u8, i])?;
                }
                t.send(to, 8, vec![t.rank() as u8])?;
            }
            let mut next = vec![0u8; t.ranks()];
            for _ in 0..100 * t.ranks() {
                let e = t.recv(7)?;
                assert_eq!(e.tag, 7);
                assert_eq!(e.payload, vec![e.from as u8, next[e.from]]);
                next[e.from] += 1;
            }
            let mut others: Vec<usize> = (0..t.ranks()).map(|_| t.recv(8).map(|e| e.from)).collect::<Result<_>>()?;
            others.sort();
            assert!(t.try_recv(7)?.is_none());
            Ok((next, others))
        })
        .unwrap();
        for (next, others) in received {
            assert_eq!(next, vec![100; 3]);
            assert_eq!(others, vec![0, 1, 2]);
        }
    }

    #[test]
    fn collectives_agree_on_every_rank() {
        for ranks in 1..=4 {
            let results = InProcessTransport::run(ranks, |t| {
                let r = t.rank() as u64;
                t.barrier()?;
                let sum = t.all_reduce_u64(r + 1, ReduceOp::Sum)?;
                let min = t.all_reduce_u64(r + 10, ReduceOp::Min)?;
                let max = t.all_reduce_f64(r as f64 * 0.5, ReduceOp::Max)?;
                let vec = t.all_reduce_u64s(&[r, 2 * r], ReduceOp::Sum)?;
                let fsum = t.all_reduce_f64s(&[0.1, r as f64], ReduceOp::Sum)?;
                let gathered = t.all_gather(vec![t.rank() as u8; t.rank()])?;
                let last = t.ranks() - 1;
                let from_last = t.broadcast(last, if t.rank() == last { b"last".to_vec() } else { vec![] })?;
                let from_zero = t.broadcast(0, if t.rank() == 0 { b"zero".to_vec() } else { vec![] })?;
                Ok((sum, min, max, vec, fsum, gathered, from_last, from_zero))
            })
            .unwrap();
            let w = ranks as u64;
            let tri = w * (w - 1) / 2;
            let expected_fsum = (0..ranks).fold(0.0, |a, _| a + 0.1);
            for (sum, min, max, vec, fsum, gathered, from_last, from_zero) in results {
                assert_eq!(sum, w * (w + 1) / 2);
                assert_eq!(min, 10);
                assert_eq!(max, (w - 1) as f64 * 0.5);
                assert_eq!(vec, vec![tri, 2 * tri]);
                assert_eq!(fsum, vec![expected_fsum, tri as f64]);
                assert_eq!(gathered, (0..ranks).map(|r| vec![r as u8; r]).collect::<Vec<_>>());
                assert_eq!(from_last, b"last");
                assert_eq!(from_zero, b"zero");
            }
        }
    }

    #[test]
    fn many_collectives_in_a_row_never_mix() {
        // Fast ranks run ahead into the next collective while rank 0 is still gathering.
        let results = InProcessTransport::run(4, |t| {
            let mut sums = Vec::new();
            for round in 0..200u64 {
                if t.rank() == 3 && round % 7 == 0 {
                    std::thread::yield_now();
                }
                sums.push(t.all_reduce_u64(round * 10 + t.rank() as u64, ReduceOp::Sum)?);
            }
            Ok(sums)
        })
        .unwrap();
        for sums in results {
            assert_eq!(sums, (0..200u64).map(|r| 40 * r + 6).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_failing_rank_ends_the_others_waits_with_its_error() {
        let started = Instant::now();
        let outcome = InProcessTransport::run(4, |t| {
            if t.rank() == 2 {
                std::thread::sleep(Duration::from_millis(20));
                return Err(Error::invalid("rank two gives up"));
            }
            // Waits for a message that never comes, then for a collective rank 2 never joins.
            t.recv(5)?;
            t.barrier()?;
            Ok(())
        });
        match outcome {
            Err(Error::InvalidArgument(message)) => assert_eq!(message, "rank two gives up"),
            other => panic!("expected rank 2's error, got {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn a_panicking_rank_fails_the_job_and_others_see_remote_errors() {
        let seen = Mutex::new(Vec::new());
        let outcome: Result<Vec<()>> = InProcessTransport::run(3, |t| {
            if t.rank() == 0 {
                panic!("boom on rank zero");
            }
            let error = t.barrier().unwrap_err();
            seen.lock().unwrap().push(error.to_string());
            Err(error)
        });
        match outcome {
            Err(Error::Remote { rank: Some(0), message }) => {
                assert!(message.contains("boom on rank zero"), "{message}")
            }
            other => panic!("expected rank 0's panic, got {other:?}"),
        }
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 2);
        assert!(seen.iter().all(|m| m.contains("rank 0 failed") && m.contains("boom")), "{seen:?}");
    }

    #[test]
    fn abort_fails_the_job_even_when_the_rank_returns() {
        let outcome = InProcessTransport::run(2, |t| {
            if t.rank() == 1 {
                t.abort(&Error::MemoryBudget("too small".into()));
                return Ok(());
            }
            t.recv(1).map(|_| ())
        });
        match outcome {
            Err(Error::Remote { rank: Some(1), message }) => assert!(message.contains("too small"), "{message}"),
            other => panic!("expected the abort, got {other:?}"),
        }
    }

    #[test]
    fn bad_destination_and_tag_are_refused() {
        InProcessTransport::run(2, |t| {
            assert!(matches!(t.send(2, 0, vec![]), Err(Error::InvalidArgument(_))));
            assert!(matches!(t.send(0, 40_000, vec![]), Err(Error::InvalidArgument(_))));
            assert!(matches!(t.broadcast(9, vec![]), Err(Error::InvalidArgument(_))));
            Ok(())
        })
        .unwrap();
        assert!(InProcessTransport::run(0, |_| Ok(())).is_err());
    }

    #[test]
    fn threads_of_one_rank_receive_on_different_tags_at_once() {
        InProcessTransport::run(2, |t| {
            let peer = 1 - t.rank();
            std::thread::scope(|s| {
                let receiver = s.spawn(|| -> Result<u64> {
                    let mut total = 0;
                    for _ in 0..50 {
                        total += t.recv(1)?.payload.len() as u64;
                    }
                    Ok(total)
                });
                for i in 0..50 {
                    t.send(peer, 1, vec![0; i])?;
                }
                let total = receiver.join().unwrap()?;
                assert_eq!(total, (0..50).sum::<u64>());
                t.barrier()
            })
        })
        .unwrap();
    }
}
