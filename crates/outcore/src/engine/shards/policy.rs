//! When to load which shards: the three policies of "Load the Edges You Need" (§5.1, §6).
//!
//! * `off` — plain GraphChi: every step loads the static shards.
//! * `ads` — aggressive dynamic shards: step 0 loads the static shards, and every step builds
//!   the dynamic shards of the next one from the edges it updated; a shadow iteration runs when
//!   the delay buffer exceeds its limit (or when only delayed work is left).
//! * `ods` — the paper's optimized default: static shards until the share of edges updated in
//!   a step falls below `p` (`--shadow-edge-share`; the paper's 0.30 under its delivery, 0.8
//!   under direct delivery, see [`DelayedDelivery::default_shadow_edge_share`]); then a first
//!   shadow iteration builds dynamic shards from the edges updated in that step and the shadow
//!   itself (with direct delivery: in the shadow only, since later sparse steps refresh them
//!   anyway and a vertex lacking edges is served at once); later shadow
//!   iterations run when the delay buffer exceeds `d` (`--delay-buffer`, 100 KiB) and rebuild
//!   the dynamic shards from every edge updated since the previous shadow. Between shadows the
//!   same dynamic shards are loaded and updated in place — except with direct delivery
//!   ([`DelayedDelivery::Adjacency`], the default), where a dynamic step in which fewer than
//!   `p` of the loaded dynamic shards' edges were updated *refreshes* them: it builds the next
//!   dynamic shards from the edges it updated, without a shadow iteration. Edges dropped that
//!   way cost nothing in convergence, since a vertex lacking them is served from its adjacency
//!   list; under the paper's delivery they would delay vertices, so it never refreshes.

use crate::error::{Error, Result};

/// Which shards a run loads (`--dynamic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DynamicPolicy {
    Off,
    Ads,
    Ods,
}

impl DynamicPolicy {
    pub const NAMES: &'static [&'static str] = &["off", "ads", "ods"];

    pub fn parse(name: &str) -> Result<DynamicPolicy> {
        match name {
            "off" => Ok(DynamicPolicy::Off),
            "ads" => Ok(DynamicPolicy::Ads),
            "ods" => Ok(DynamicPolicy::Ods),
            other => Err(Error::invalid(format!("unknown --dynamic policy '{other}' (available: off, ads, ods)"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DynamicPolicy::Off => "off",
            DynamicPolicy::Ads => "ads",
            DynamicPolicy::Ods => "ods",
        }
    }
}

/// Where the messages of a vertex delayed on a dynamic shard go (`--delayed-delivery`).
///
/// * `shadow` — the paper's rule (§3, Algorithm 1): the vertex waits in the delay buffer and
///   the next shadow iteration sends its folded messages along the edges that were missing.
/// * `adjacency` (default) — our addition: the vertex's missing edges are read at once from the
///   store's adjacency list (`csr-out`, and `csr-in` for backward messages) and its messages
///   along them reach their targets in the next step like those on shard edges, and nothing
///   waits for a shadow iteration. On R-MAT
///   graphs most vertices that wake up after the first shadow iteration have edges outside the
///   dynamic shards; with `shadow` their waves wait for shadows, which each read every static
///   shard, and pr-delta took 42 % more steps than `off` (see [`super::direct`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DelayedDelivery {
    Shadow,
    Adjacency,
}

impl DelayedDelivery {
    pub fn parse(name: &str) -> Result<DelayedDelivery> {
        match name {
            "shadow" => Ok(DelayedDelivery::Shadow),
            "adjacency" => Ok(DelayedDelivery::Adjacency),
            other => {
                Err(Error::invalid(format!("unknown --delayed-delivery '{other}' (available: adjacency, shadow)")))
            }
        }
    }

    /// ODS's `p` when `--shadow-edge-share` is not given. The paper's 0.30 (§5.1) suits its
    /// delivery, where a vertex lacking edges waits for a shadow iteration. With direct delivery
    /// a vertex lacking edges is served at once and each sparse dynamic step rebuilds the set
    /// from its own updated edges, so switching early costs little: on RMAT-18 at 32 MiB, p =
    /// 0.8 read and wrote 1.157× fewer bytes than `off` for pr-delta (0.30: 1.117) and 1.31× for
    /// wcc (1.19), with mssp and sssp unchanged and the same steps; RMAT-16 alike, apart from
    /// wcc on the sorted RMAT-16 (1.086 → 1.071).
    pub fn default_shadow_edge_share(self) -> f64 {
        match self {
            DelayedDelivery::Shadow => 0.30,
            DelayedDelivery::Adjacency => 0.8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DelayedDelivery::Shadow => "shadow",
            DelayedDelivery::Adjacency => "adjacency",
        }
    }
}

/// What kind of shards a step loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// The static shards only.
    #[default]
    Static,
    /// The current dynamic shards only.
    Dynamic,
    /// Static shards overlaid with every dynamic shard since the last shadow (Algorithm 1).
    Shadow,
}

impl StepKind {
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Static => "static",
            StepKind::Dynamic => "dynamic",
            StepKind::Shadow => "shadow",
        }
    }
}

/// The plan of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepPlan {
    pub kind: StepKind,
    /// Build the next dynamic shards from the edges whose last update happened in this step
    /// or later (`None`: build none).
    pub build_since: Option<usize>,
}

/// What the previous step left behind, for the next plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct StepOutcome {
    /// Share of edge records updated with a non-identity message.
    pub updated_share: f64,
    pub delay_bytes: u64,
    pub delayed_vertices: usize,
    /// Whether any vertex sent messages.
    pub scattered: bool,
    /// Dynamic steps: share of the loaded dynamic shards' edge records updated in the step.
    pub dynamic_share: Option<f64>,
}

/// The policy's state across steps.
#[derive(Debug, Clone)]
pub struct ShadowSchedule {
    policy: DynamicPolicy,
    shadow_edge_share: f64,
    delay_limit: u64,
    last_shadow: Option<usize>,
    /// ODS: dynamic steps may refresh the dynamic shards (direct delivery only).
    refresh: bool,
}

impl ShadowSchedule {
    pub fn new(policy: DynamicPolicy, shadow_edge_share: f64, delay_limit: u64) -> Self {
        ShadowSchedule { policy, shadow_edge_share, delay_limit, last_shadow: None, refresh: false }
    }

    /// Lets ODS refresh its dynamic shards in dynamic steps (for [`DelayedDelivery::Adjacency`]).
    pub fn refreshing(mut self, refresh: bool) -> Self {
        self.refresh = refresh;
        self
    }

    pub fn last_shadow(&self) -> Option<usize> {
        self.last_shadow
    }

    /// The plan of step `step` given the outcome of step `step − 1` (`None` for step 0).
    pub fn plan(&mut self, step: usize, last: Option<&StepOutcome>) -> StepPlan {
        let delay_due =
            last.is_some_and(|o| o.delay_bytes > self.delay_limit || (!o.scattered && o.delayed_vertices > 0));
        let plan = match self.policy {
            DynamicPolicy::Off => StepPlan { kind: StepKind::Static, build_since: None },
            DynamicPolicy::Ads => match last {
                None => StepPlan { kind: StepKind::Shadow, build_since: Some(step) },
                Some(_) if delay_due => StepPlan { kind: StepKind::Shadow, build_since: Some(step) },
                Some(_) => StepPlan { kind: StepKind::Dynamic, build_since: Some(step) },
            },
            DynamicPolicy::Ods => match (self.last_shadow, last) {
                (None, Some(o)) if o.updated_share < self.shadow_edge_share => {
                    // The paper's first set holds the edges of the step before too, so that fewer
                    // vertices lack edges and wait; a refreshing run serves those at once and
                    // rebuilds its set from each sparse step, so the shadow's edges suffice.
                    let since = if self.refresh { step } else { step - 1 };
                    StepPlan { kind: StepKind::Shadow, build_since: Some(since) }
                }
                (None, _) => StepPlan { kind: StepKind::Static, build_since: None },
                (Some(l), _) if delay_due => StepPlan { kind: StepKind::Shadow, build_since: Some(l + 1) },
                (Some(_), Some(o)) if self.refresh && o.dynamic_share.is_some_and(|s| s < self.shadow_edge_share) => {
                    StepPlan { kind: StepKind::Dynamic, build_since: Some(step) }
                }
                (Some(_), _) => StepPlan { kind: StepKind::Dynamic, build_since: None },
            },
        };
        if plan.kind == StepKind::Shadow {
            self.last_shadow = Some(step);
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(share: f64, delay_bytes: u64) -> StepOutcome {
        StepOutcome {
            updated_share: share,
            delay_bytes,
            delayed_vertices: (delay_bytes > 0) as usize,
            scattered: true,
            dynamic_share: None,
        }
    }

    #[test]
    fn ods_waits_for_the_edge_share_then_for_the_delay_buffer() {
        let mut s = ShadowSchedule::new(DynamicPolicy::Ods, 0.3, 1000);
        assert_eq!(s.plan(0, None).kind, StepKind::Static);
        assert_eq!(s.plan(1, Some(&outcome(0.9, 0))).kind, StepKind::Static);
        assert_eq!(s.plan(2, Some(&outcome(0.2, 0))), StepPlan { kind: StepKind::Shadow, build_since: Some(1) });
        assert_eq!(s.plan(3, Some(&outcome(0.9, 10))).kind, StepKind::Dynamic);
        assert_eq!(s.plan(4, Some(&outcome(0.1, 2000))), StepPlan { kind: StepKind::Shadow, build_since: Some(3) });
        let flush = StepOutcome { delayed_vertices: 1, delay_bytes: 8, ..StepOutcome::default() };
        assert_eq!(s.plan(5, Some(&flush)).kind, StepKind::Shadow);
    }

    #[test]
    fn ods_refreshes_sparse_dynamic_shards_only_with_direct_delivery() {
        let dynamic = |share: f64| StepOutcome { dynamic_share: Some(share), ..outcome(0.01, 0) };
        for refresh in [false, true] {
            let mut s = ShadowSchedule::new(DynamicPolicy::Ods, 0.3, 1000).refreshing(refresh);
            assert_eq!(s.plan(0, None).kind, StepKind::Static);
            let first = s.plan(1, Some(&outcome(0.2, 0)));
            assert_eq!(first, StepPlan { kind: StepKind::Shadow, build_since: Some(if refresh { 1 } else { 0 }) });
            assert_eq!(s.plan(2, Some(&outcome(0.2, 0))), StepPlan { kind: StepKind::Dynamic, build_since: None });
            assert_eq!(s.plan(3, Some(&dynamic(0.5))), StepPlan { kind: StepKind::Dynamic, build_since: None });
            let sparse = s.plan(4, Some(&dynamic(0.1)));
            assert_eq!(sparse, StepPlan { kind: StepKind::Dynamic, build_since: refresh.then_some(4) });
            assert_eq!(s.last_shadow(), Some(1), "a refresh is no shadow iteration");
        }
    }

    #[test]
    fn ads_builds_every_step_and_off_never() {
        let mut s = ShadowSchedule::new(DynamicPolicy::Ads, 0.3, 1000);
        assert_eq!(s.plan(0, None).kind, StepKind::Shadow);
        assert_eq!(s.plan(1, Some(&outcome(0.9, 0))), StepPlan { kind: StepKind::Dynamic, build_since: Some(1) });
        assert_eq!(s.plan(2, Some(&outcome(0.9, 5000))).kind, StepKind::Shadow);
        let mut off = ShadowSchedule::new(DynamicPolicy::Off, 0.3, 1000);
        assert_eq!(off.plan(3, Some(&outcome(0.0, 5000))), StepPlan { kind: StepKind::Static, build_since: None });
    }
}
