//! The ingest target a run aimed at, as its throughput plot draws it
//! beside the achieved rate: the open model's `load.rate` or
//! `[[load.stages]]` (`crate::scenario::stages`), read from the run's
//! resolved scenario (`summary.json`) and placed at the load's start (op
//! 0's intended start in the history). The closed model's stages are a
//! worker count, not a rate: no line is drawn for them.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::scenario::stages::{Curve, Stage};
use serde_json::Value;

/// The open model's target as (s since the run's start, ops/s) points
/// joined by straight lines, from the load's start to `end_s`, placed by
/// ingest op 0's intended start (`op0_start_s`): the load began as long
/// before it as the curve takes to make op 0 due (0 s, unless the stages
/// open with a target of 0). None: no open-model target in
/// `resolved_scenario`.
pub fn target_points(
    resolved_scenario: &Value,
    op0_start_s: f64,
    end_s: f64,
) -> Option<Vec<(f64, f64)>> {
    let load = resolved_scenario.get("load")?;
    if load.get("model")?.as_str()? != "open" {
        return None;
    }
    let stages: Vec<Stage> = load
        .get("stages")
        .map(|v| serde_json::from_value(v.clone()))
        .transpose()
        .ok()?
        .unwrap_or_default();
    let curve = if stages.is_empty() {
        Curve::constant(load.get("rate")?.as_f64().filter(|r| *r > 0.0)?)
    } else {
        Curve::new(&stages)
    };
    let load_start_s = op0_start_s - curve.intended_ns(0).unwrap_or(0) as f64 / 1e9;
    let mut points: Vec<(f64, f64)> = curve
        .points()
        .into_iter()
        .map(|(t, y)| (load_start_s + t, y))
        .collect();
    let (last_t, last_y) = *points.last()?;
    if end_s > last_t {
        points.push((end_s, last_y));
    }
    Some(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stages_are_placed_at_the_load_start() {
        let s = json!({"load": {"model": "open", "rate": 0.0, "stages": [
            {"duration": "10s", "target": 2000.0},
            {"duration": "10s", "target": 2000.0},
            {"duration": "10s", "target": 0.0}
        ]}});
        assert_eq!(
            target_points(&s, 0.5, 31.0),
            Some(vec![
                (0.5, 0.0),
                (10.5, 2000.0),
                (20.5, 2000.0),
                (30.5, 0.0),
                (31.0, 0.0)
            ])
        );
    }

    #[test]
    fn stages_that_open_at_0_begin_before_op_0() {
        // Op 0 is due when the target first rises: 2 s into the load.
        let s = json!({"load": {"model": "open", "rate": 0.0, "stages": [
            {"duration": "2s", "target": 0.0},
            {"duration": "0s", "target": 100.0},
            {"duration": "1s", "target": 100.0}
        ]}});
        assert_eq!(
            target_points(&s, 2.5, 4.0),
            Some(vec![
                (0.5, 0.0),
                (2.5, 0.0),
                (2.5, 100.0),
                (3.5, 100.0),
                (4.0, 100.0)
            ])
        );
    }

    #[test]
    fn a_constant_rate_is_flat_and_the_closed_model_has_none() {
        let open = json!({"load": {"model": "open", "rate": 500.0}});
        assert_eq!(
            target_points(&open, 0.25, 5.0),
            Some(vec![(0.25, 500.0), (5.0, 500.0)])
        );
        let closed = json!({"load": {"model": "closed", "rate": 0.0}});
        assert_eq!(target_points(&closed, 0.0, 5.0), None);
    }
}
