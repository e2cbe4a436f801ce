//! The floor of a dense PageRank pull on this machine: how fast one pass over a store's csr-in
//! can fold `f64` messages when nothing but the fold runs (no program, no bitmaps, no I/O).
//!
//! The stream engine's steady PageRank iteration (`engine/stream/pull.rs`) folds the same
//! arcs, over the same degree-ordered sources, in 4 lanes, on all threads. This program times
//! that loop alone, so the distance between an engine iteration and its floor is a measured
//! figure, and times it again with every source id folded into a 1 MiB window (all loads hit
//! the L2 cache): the gap between the two is what the random loads of messages cost.
//!
//!     cargo run --release -p outcore --example pull_floor -- STORE [PASSES]
//!
//! Prints the median seconds of a pass, each way. Needs csr-in (a directed store) in memory:
//! 12 bytes an arc while it loads.

use std::time::Instant;

use outcore::store::{Direction, Store};
use rayon::prelude::*;

/// Targets per rayon task, as in the stream engine's pulls.
const TARGETS_PER_TASK: usize = 2048;
/// Ids folded into this many sources for the cache-resident run (1 MiB of `f64`).
const RESIDENT_SOURCES: usize = 1 << 17;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let store = Store::open(args.next().ok_or("usage: pull_floor STORE [PASSES]")?)?;
    let passes: usize = args.next().map_or(Ok(5), |p| p.parse())?;
    let csr_in = store.csr(Direction::In)?.load()?;
    let out_offsets = store.csr(Direction::Out)?.load()?.offsets;
    let slot_of = degree_order(&out_offsets);
    let ids: Vec<u32> = csr_in.targets.par_iter().map(|&s| slot_of[s as usize]).collect();
    let sent: Vec<f64> = (0..slot_of.len()).map(|i| 1.0 / (i as f64 + 1.0)).collect();
    let mut folded = vec![0f64; slot_of.len()];
    for (what, mask) in [("degree-ordered sources", usize::MAX), ("sources within 1 MiB", RESIDENT_SOURCES - 1)] {
        let mut seconds: Vec<f64> = (0..passes)
            .map(|_| {
                let start = Instant::now();
                fold_pass(&csr_in.offsets, &ids, &sent, mask, &mut folded);
                start.elapsed().as_secs_f64()
            })
            .collect();
        seconds.sort_by(f64::total_cmp);
        println!(
            "{what}: {:.4} s a pass (median of {passes}), {} arcs, {} threads, checksum {:.6e}",
            seconds[passes / 2],
            ids.len(),
            rayon::current_num_threads(),
            folded.iter().sum::<f64>()
        );
    }
    Ok(())
}

/// The slot of each vertex: by descending ⌊log2 out-degree⌋ class, ascending id within a
/// class (the stream engine's `SourceOrder`).
fn degree_order(out_offsets: &[u64]) -> Vec<u32> {
    let class = |v: usize| 64 - (out_offsets[v + 1] - out_offsets[v]).leading_zeros() as usize;
    let mut order: Vec<usize> = (0..out_offsets.len() - 1).collect();
    order.sort_by_key(|&v| (std::cmp::Reverse(class(v)), v));
    let mut slot_of = vec![0u32; order.len()];
    for (slot, &v) in order.iter().enumerate() {
        slot_of[v] = slot as u32;
    }
    slot_of
}

/// One pull of every target's messages, 4 lanes a target, tasks of [`TARGETS_PER_TASK`].
fn fold_pass(offsets: &[u64], ids: &[u32], sent: &[f64], mask: usize, folded: &mut [f64]) {
    folded.par_chunks_mut(TARGETS_PER_TASK).enumerate().for_each(|(task, out)| {
        for (i, slot) in out.iter_mut().enumerate() {
            let t = task * TARGETS_PER_TASK + i;
            let list = &ids[offsets[t] as usize..offsets[t + 1] as usize];
            let mut lanes = [0f64; 4];
            let mut groups = list.chunks_exact(4);
            for group in &mut groups {
                for (lane, &s) in lanes.iter_mut().zip(group) {
                    *lane += sent[s as usize & mask];
                }
            }
            for (lane, &s) in lanes.iter_mut().zip(groups.remainder()) {
                *lane += sent[s as usize & mask];
            }
            *slot = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        }
    });
}
