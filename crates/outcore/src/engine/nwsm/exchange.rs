//! What the ranks of an nwsm run send each other beside their scatter (TurboGraph++ §4.1):
//! pages of their vertices' lists that other ranks' level-2 windows ask for (a page server per
//! rank), and combined updates for the owner's global gather buffer, under a credit window so
//! that no rank has more update bytes in flight than the plan charges.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::gather::{encode_updates, GlobalGather, UpdateSink, SPILL_RECORD_BYTES};
use super::{NeighborhoodQuery, TAG_PAGE_REPLY, TAG_PAGE_REQUEST, TAG_UPDATES, TAG_UPDATE_ACK};
use crate::error::{Error, Result};
use crate::store::files::u32s_from_le_bytes;
use crate::store::StoreFile;
use crate::transport::Transport;

/// Byte and time counters of a rank's transport use, shared by its threads.
#[derive(Default)]
pub(super) struct NetworkCounters {
    bytes: AtomicU64,
    nanos: AtomicU64,
    updates_to_other_ranks: AtomicU64,
}

impl NetworkCounters {
    pub(super) fn record(&self, bytes: usize, since: Instant) {
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        self.nanos.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// Bytes sent and received, and the time spent doing so.
    pub(super) fn traffic(&self) -> (u64, Duration) {
        (self.bytes.load(Ordering::Relaxed), Duration::from_nanos(self.nanos.load(Ordering::Relaxed)))
    }

    /// Updates this rank sent to other ranks' global gather buffers.
    pub(super) fn updates_to_other_ranks(&self) -> u64 {
        self.updates_to_other_ranks.load(Ordering::Relaxed)
    }
}

/// Hands combined updates to this rank's global gather buffer or sends them to their owner.
pub(super) struct RankSink<'a, Q: NeighborhoodQuery> {
    pub(super) rank: usize,
    pub(super) transport: &'a dyn Transport,
    pub(super) global: &'a Mutex<GlobalGather<Q::Value>>,
    pub(super) query: &'a Q,
    pub(super) network: &'a NetworkCounters,
    pub(super) credits: &'a UpdateCredits,
}

impl<Q: NeighborhoodQuery> UpdateSink<Q::Value> for RankSink<'_, Q> {
    fn deliver(&self, rank: usize, batch: &[(u32, Q::Value)]) -> Result<()> {
        if rank == self.rank {
            let mut global = self.global.lock().unwrap();
            global.stats.updates_sent += batch.len() as u64;
            return global.gather(self.query, batch);
        }
        for part in batch.chunks(self.credits.records_per_batch()) {
            let len = part.len() * SPILL_RECORD_BYTES;
            self.credits.acquire(self.transport, rank, len as u64)?;
            let t = Instant::now();
            self.transport.send(rank, TAG_UPDATES, encode_updates(part))?;
            self.network.updates_to_other_ranks.fetch_add(part.len() as u64, Ordering::Relaxed);
            self.network.record(len, t);
        }
        Ok(())
    }
}

/// Credit-based flow control of the update batches a rank sends (§4.1's transfer of local
/// gather buffers to their owners, bounded): toward each other rank at most `per_destination`
/// bytes may be unacknowledged; the owner acknowledges a batch once it is gathered. So a rank
/// never has more than the plan's `update_window_bytes` in flight, nor receives more.
pub(super) struct UpdateCredits {
    per_destination: u64,
    state: Mutex<CreditState>,
}

struct CreditState {
    outstanding: Vec<u64>,
    in_flight: u64,
    max_in_flight: u64,
    /// Sends that had to wait for an acknowledgement first.
    waits: u64,
}

impl UpdateCredits {
    /// The most update bytes in flight at once, and the sends that waited for credit.
    pub(super) fn figures(&self) -> (u64, u64) {
        let state = self.state.lock().unwrap();
        (state.max_in_flight, state.waits)
    }

    pub(super) fn new(window_bytes: u64, ranks: usize) -> UpdateCredits {
        let share = window_bytes / ranks.saturating_sub(1).max(1) as u64;
        let per_destination = (share / SPILL_RECORD_BYTES as u64).max(1) * SPILL_RECORD_BYTES as u64;
        UpdateCredits {
            per_destination,
            state: Mutex::new(CreditState { outstanding: vec![0; ranks], in_flight: 0, max_in_flight: 0, waits: 0 }),
        }
    }

    fn records_per_batch(&self) -> usize {
        (self.per_destination / SPILL_RECORD_BYTES as u64) as usize
    }

    /// Takes `bytes` of credit toward `to`, taking acknowledgements while its window is full.
    /// (Other senders of this rank wait meanwhile: they would wait for credit anyway.)
    fn acquire(&self, transport: &dyn Transport, to: usize, bytes: u64) -> Result<()> {
        let mut state = self.state.lock().unwrap();
        if state.outstanding[to] > 0 && state.outstanding[to] + bytes > self.per_destination {
            state.waits += 1;
        }
        while state.outstanding[to] > 0 && state.outstanding[to] + bytes > self.per_destination {
            Self::take_ack(&mut state, transport)?;
        }
        state.outstanding[to] += bytes;
        state.in_flight += bytes;
        state.max_in_flight = state.max_in_flight.max(state.in_flight);
        Ok(())
    }

    /// Waits until every batch sent has been acknowledged (before telling the others "done").
    pub(super) fn drain(&self, transport: &dyn Transport) -> Result<()> {
        let mut state = self.state.lock().unwrap();
        while state.in_flight > 0 {
            Self::take_ack(&mut state, transport)?;
        }
        Ok(())
    }

    fn take_ack(state: &mut CreditState, transport: &dyn Transport) -> Result<()> {
        let ack = transport.recv(TAG_UPDATE_ACK)?;
        let bytes = ack.payload.get(..8).map(|b| u64::from_le_bytes(b.try_into().unwrap()));
        match bytes {
            Some(bytes) if bytes <= state.outstanding[ack.from] => {
                state.outstanding[ack.from] -= bytes;
                state.in_flight -= bytes;
                Ok(())
            }
            _ => {
                Err(Error::Remote { rank: Some(ack.from), message: "an update acknowledgement out of protocol".into() })
            }
        }
    }
}

/// Answers other ranks' page requests from this rank's page file until every rank is done.
pub(super) fn serve_pages(
    transport: &dyn Transport,
    local: &StoreFile,
    batch_pages: usize,
    page_size: u64,
    ranks: usize,
    network: &NetworkCounters,
) -> Result<u64> {
    let (mut done, mut served) = (0, 0u64);
    while done < ranks {
        let request = transport.recv(TAG_PAGE_REQUEST)?;
        if request.payload.is_empty() {
            done += 1;
            continue;
        }
        let pages = u32s_from_le_bytes(&request.payload);
        if pages.len() > batch_pages {
            return Err(Error::Remote {
                rank: Some(request.from),
                message: format!("a request for {} pages, more than the {batch_pages} the plan allows", pages.len()),
            });
        }
        let mut bytes = vec![0u8; pages.len() * page_size as usize];
        for (k, &page) in pages.iter().enumerate() {
            let frame = &mut bytes[k * page_size as usize..(k + 1) * page_size as usize];
            local.read_exact_at(frame, page as u64 * page_size)?;
        }
        served += pages.len() as u64;
        let t = Instant::now();
        let len = bytes.len();
        transport.send(request.from, TAG_PAGE_REPLY, bytes)?;
        network.record(len, t);
    }
    Ok(served)
}

/// The global gather task (Algorithm 2): updates from other ranks into this rank's buffer.
pub(super) fn receive_updates<Q: NeighborhoodQuery>(
    transport: &dyn Transport,
    global: &Mutex<GlobalGather<Q::Value>>,
    query: &Q,
    ranks: usize,
) -> Result<()> {
    let mut done = 0;
    while done < ranks {
        let message = transport.recv(TAG_UPDATES)?;
        if message.payload.is_empty() {
            done += 1;
            continue;
        }
        let (len, message_from) = (message.payload.len(), message.from);
        {
            let mut global = global.lock().unwrap();
            global.stats.updates_sent += (len / SPILL_RECORD_BYTES) as u64;
            global.gather_encoded(query, &message.payload)?;
        }
        drop(message);
        transport.send(message_from, TAG_UPDATE_ACK, (len as u64).to_le_bytes().to_vec())?;
    }
    Ok(())
}
