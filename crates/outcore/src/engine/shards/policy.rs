//! When to load which shards: the three policies of "Load the Edges You Need" (§5.1, §6).
//!
//! * `off` — plain GraphChi: every step loads the static shards.
//! * `ads` — aggressive dynamic shards: step 0 loads the static shards, and every step builds
//!   the dynamic shards of the next one from the edges it updated; a shadow iteration runs when
//!   the delay buffer exceeds its limit (or when only delayed work is left).
//! * `ods` — the paper's optimized default: static shards until the share of edges updated in
//!   a step falls below `p` (`--shadow-edge-share`, 0.30); then a first shadow iteration builds
//!   dynamic shards from the edges updated in that step and the shadow itself; later shadow
//!   iterations run when the delay buffer exceeds `d` (`--delay-buffer`, 100 KiB) and rebuild
//!   the dynamic shards from every edge updated since the previous shadow. Between shadows the
//!   same dynamic shards are loaded and updated in place.

use crate::error::{Error, Result};

/// Which shards a run loads (`--dynamic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// What kind of shards a step loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// The static shards only.
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
}

/// The policy's state across steps.
#[derive(Debug, Clone)]
pub struct ShadowSchedule {
    policy: DynamicPolicy,
    shadow_edge_share: f64,
    delay_limit: u64,
    last_shadow: Option<usize>,
}

impl ShadowSchedule {
    pub fn new(policy: DynamicPolicy, shadow_edge_share: f64, delay_limit: u64) -> Self {
        ShadowSchedule { policy, shadow_edge_share, delay_limit, last_shadow: None }
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
                    StepPlan { kind: StepKind::Shadow, build_since: Some(step - 1) }
                }
                (None, _) => StepPlan { kind: StepKind::Static, build_since: None },
                (Some(l), _) if delay_due => StepPlan { kind: StepKind::Shadow, build_since: Some(l + 1) },
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
        StepOutcome { updated_share: share, delay_bytes, delayed_vertices: (delay_bytes > 0) as usize, scattered: true }
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
    fn ads_builds_every_step_and_off_never() {
        let mut s = ShadowSchedule::new(DynamicPolicy::Ads, 0.3, 1000);
        assert_eq!(s.plan(0, None).kind, StepKind::Shadow);
        assert_eq!(s.plan(1, Some(&outcome(0.9, 0))), StepPlan { kind: StepKind::Dynamic, build_since: Some(1) });
        assert_eq!(s.plan(2, Some(&outcome(0.9, 5000))).kind, StepKind::Shadow);
        let mut off = ShadowSchedule::new(DynamicPolicy::Off, 0.3, 1000);
        assert_eq!(off.plan(3, Some(&outcome(0.0, 5000))), StepPlan { kind: StepKind::Static, build_since: None });
    }
}
