//! The static cache's selection for a run: loaded from the store when a run with the same
//! method, page size, static-cache size and edge bytes saved one (the
//! `static-cache-selection/KEY` layout), else computed by [`super::selection`] within the
//! memory the caches and vertex state will use later, and saved (BASC §3: selection is a
//! pre-processing step, paid once per store and configuration).

use std::time::Instant;

use serde_json::{json, Map};

use super::memory::MemoryPlan;
use super::selection::{chunk_edges_within, select, working_bytes, Lists, SelectionInput};
use super::{CacheEngine, CacheOptions, SelectionMethod};
use crate::engine::{CacheSelection, Runner};
use crate::error::{Error, Result};
use crate::runtime::{format_size, Charge, ProgressUnit};
use crate::store::manifest::{FileEntry, LayoutEntry, Manifest, MANIFEST_FILE};
use crate::store::order::in_degrees;
use crate::store::{Store, StoreFileWriter};

/// A static-cache selection ([`CacheEngine::selection`]).
pub(super) struct Selected {
    /// The selected vertices, ascending.
    pub(super) vertices: Vec<u64>,
    pub(super) figures: CacheSelection,
    /// GVS's resident copy of the `csr-out` targets, when it held one, with its ledger charge.
    pub(super) resident: Option<(Vec<u8>, Charge)>,
}

/// The layout a selection for these parameters is saved as, and its file in the store. Later
/// runs load it; the planner prices a run without it as one that selects first.
pub(crate) fn selection_names(options: &CacheOptions, static_cache: u64, edge_bytes: u64) -> (String, String) {
    let method = options.selection;
    let mut key = format!("{}-p{}-b{static_cache}-e{edge_bytes}", method.name(), options.page_size);
    match method {
        SelectionMethod::Gvs => key.push_str(&format!("-k{}", options.gvs_rounds)),
        SelectionMethod::Random => key.push_str(&format!("-s{}", options.seed)),
        _ => {}
    }
    (format!("static-cache-selection/{key}"), format!("cache/selection-{key}.u64"))
}

/// Whether GVS holds csr-out's targets while it selects, reading them once, rather than once a
/// round: its per-vertex arrays and the targets fit the memory of the caches and the vertex
/// state, which do not exist yet (selection.rs, "What is resident").
/// `pages` are the targets file's pages.
pub(crate) fn gvs_holds_lists(vertices: u64, pages: u64, targets_bytes: u64, plan: &MemoryPlan) -> bool {
    working_bytes(SelectionMethod::Gvs, vertices, pages, 0) + targets_bytes <= plan.cache + plan.reserved_state
}

impl CacheEngine {
    /// The saved selection for these parameters, or a new one (saved in the store).
    pub(super) fn selection(
        runner: &Runner,
        layout: &crate::store::CsrLayout,
        out_offsets: &[u64],
        plan: MemoryPlan,
        edge_bytes: u64,
    ) -> Result<Selected> {
        let options = &runner.options().cache;
        let store = runner.store();
        let method = options.selection;
        let (layout_name, rel) = selection_names(options, plan.static_cache, edge_bytes);
        if let Some(damaged) = store.damaged_layout(&layout_name) {
            return Err(damaged);
        }
        // Read the manifest afresh: another run may have saved the selection since we opened.
        let manifest = Manifest::read(&store.dir().join(MANIFEST_FILE))?;
        if let (Some(_), Some(entry)) = (manifest.layouts.get(&layout_name), manifest.files.get(&rel)) {
            let started = Instant::now();
            let file = store.file(&rel)?;
            if file.len() == entry.bytes && file.len() % 8 == 0 {
                let selected = crate::store::files::u64s_from_le_bytes(&file.read_all()?);
                if selected.iter().all(|&v| v < store.num_vertices()) {
                    let figures = CacheSelection {
                        selection_source: "loaded from the store",
                        selection_seconds: started.elapsed().as_secs_f64(),
                        selection_bytes_read: None,
                    };
                    return Ok(Selected { vertices: selected, figures, resident: None });
                }
            }
        }
        let started = Instant::now();
        let io_before = store.counters().snapshot();
        // The selection runs before the caches and the program state exist, so it may use
        // their memory: GVS holds the lists too when they fit (selection.rs, "What is
        // resident"), else it streams them once per round.
        let pages = layout.targets.len().div_ceil(options.page_size);
        let available = plan.cache + plan.reserved_state;
        let n = store.num_vertices();
        let targets_bytes = layout.arcs * layout.target_bytes;
        let resident = method == SelectionMethod::Gvs && gvs_holds_lists(n, pages, targets_bytes, &plan);
        let chunk_edges = if resident { 0 } else { chunk_edges_within(n, pages, available) };
        let needed = working_bytes(method, n, pages, chunk_edges) + if resident { targets_bytes } else { 0 };
        if needed > available {
            return Err(Error::MemoryBudget(format!(
                "{} selection needs about {} of working memory but the cache and vertex state have {}",
                method.name(),
                format_size(needed),
                format_size(available)
            )));
        }
        let working = runner.ledger().charge("static cache selection", needed)?;
        let indeg = in_degrees(store)?;
        let bar =
            runner.progress().start(&format!("static cache selection ({})", method.name()), None, ProgressUnit::Items);
        let targets = if resident {
            let all = layout.read_all_encoded_targets()?;
            crate::runtime::direct::drop_from_os_cache(layout.targets.raw(), 0, layout.targets.len());
            Some(all)
        } else {
            None
        };
        let input = SelectionInput {
            layout,
            out_offsets,
            in_degree: &indeg,
            page_size: options.page_size,
            budget_bytes: plan.static_cache,
            edge_bytes,
            rounds: options.gvs_rounds,
            seed: options.seed,
            lists: match &targets {
                Some(all) => Lists::Resident(all),
                None => Lists::Streamed { chunk_edges },
            },
        };
        let selected = select(method, &input)?;
        bar.finish();
        let seconds = started.elapsed().as_secs_f64();
        let figures = CacheSelection {
            selection_source: "computed",
            selection_seconds: seconds,
            selection_bytes_read: Some(store.counters().snapshot().since(&io_before).bytes_read),
        };
        Self::save_selection(store, &layout_name, &rel, &selected, method, options, plan, edge_bytes, seconds)?;
        // The resident lists stay charged until the static cache has taken its lists from them.
        Ok(Selected { vertices: selected, figures, resident: targets.map(|all| (all, working)) })
    }

    #[allow(clippy::too_many_arguments)]
    fn save_selection(
        store: &Store,
        layout_name: &str,
        rel: &str,
        selected: &[u64],
        method: SelectionMethod,
        options: &CacheOptions,
        plan: MemoryPlan,
        edge_bytes: u64,
        seconds: f64,
    ) -> Result<()> {
        let _building = store.lock_builds()?;
        let mut writer = StoreFileWriter::create(&store.path(rel), store.counters().clone())?;
        for &v in selected {
            writer.write_u64(v)?;
        }
        let entry: FileEntry = writer.finish()?;
        let mut params = Map::new();
        params.insert("method".into(), method.name().into());
        params.insert("page_size".into(), options.page_size.into());
        params.insert("budget_bytes".into(), plan.static_cache.into());
        params.insert("edge_bytes".into(), edge_bytes.into());
        params.insert("gvs_rounds".into(), options.gvs_rounds.into());
        params.insert("seed".into(), options.seed.into());
        params.insert("vertices".into(), (selected.len() as u64).into());
        params.insert("seconds".into(), json!(seconds));
        let layout = LayoutEntry { files: vec![rel.to_string()], bytes: entry.bytes, params };
        let mut fresh = store.reopen()?;
        fresh.add_layout(layout_name, layout, vec![(rel.to_string(), entry)])
    }
}
