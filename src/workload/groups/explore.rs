//! The groups world (BacktalkGroups.tla): ingest workers that run their
//! queues of event ids as `ingest` step machines, and one resolver that
//! may resolve any open or regressed group, each step one statement of the
//! user's statement file on the explorer's database. The spec's
//! bookkeeping (`done`, `dirty`, `resolvesLeft`) is kept beside the
//! machines, updated at the step the spec updates it.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::statements::GroupsVariant;
use crate::explore::machine::{machine_key, run_step, statement};
use crate::explore::world::{StepLabel, Violation, World};
use crate::scenario::Explore;
use crate::workload::groups::checker::GroupRow;
use crate::workload::groups::explore_constants::{Constants, GroupsView};
use crate::workload::groups::explore_invariants;
use crate::workload::groups::{group_id, ingest_result, resolve_result, IngestOp, ResolveOp};
use crate::workload::{Next, StepMachine, Value};
use rusqlite::Connection;

/// One ingest worker: where it is in its queue, and its op in flight
/// (None once the queue is done: the spec's `idx = QLen + 1`).
#[derive(Debug, Clone)]
pub struct Ingester<'v> {
    /// Index into the worker's queue of the current event (the spec's `idx - 1`).
    pub at: usize,
    /// The current ingest op; its position is the spec's `pc`, its values
    /// read the spec's `readSt`.
    pub machine: Option<StepMachine<'v>>,
}

/// A state of the groups world besides the rows.
#[derive(Debug, Clone)]
pub struct GroupsState<'v> {
    /// Per worker.
    pub workers: Vec<Ingester<'v>>,
    /// The resolver's op in flight, with its group (fingerprint index):
    /// only a resolve op of several steps is ever seen in flight.
    pub resolver: Option<(usize, StepMachine<'v>)>,
    /// `resolvesLeft`.
    pub resolves_left: u32,
    /// `done`, per event index.
    pub done: Vec<bool>,
    /// `dirty`, per fingerprint index.
    pub dirty: Vec<bool>,
}

/// One scheduling choice of the groups world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Worker `w` runs the next step of its ingest op.
    Ingest(usize),
    /// The resolver starts resolving the group of fingerprint `fp` (and
    /// runs the op's first step): the spec's `Resolve` with `g.fp = fp`.
    Resolve(usize),
    /// The resolver runs the next step of its op in flight.
    ResolverStep,
}

/// The groups world over one statement file.
pub struct GroupsWorld<'v> {
    /// The statement file under test.
    pub variant: &'v GroupsVariant,
    /// The spec's constants.
    pub c: Constants,
}

impl<'v> GroupsWorld<'v> {
    /// The world of `x` over `variant`.
    pub fn new(variant: &'v GroupsVariant, x: &Explore) -> Self {
        GroupsWorld {
            variant,
            c: Constants::new(x),
        }
    }

    /// The name of worker `w` as the spec writes it (w1, w2, ...).
    pub fn worker_name(w: usize) -> String {
        format!("w{}", w + 1)
    }

    fn ingest_machine(&self, event: usize) -> StepMachine<'v> {
        let fp = &self.c.fps[self.c.fp_of[event]];
        let op = IngestOp {
            event_id: self.c.events[event].clone(),
            project: self.c.project.clone(),
            fingerprint: fp.clone(),
            group_id: group_id(&self.c.project, fp),
            message: "explore".into(),
            attempt: 0,
            intended_ns: None,
            group: 0,
            key: 0,
        };
        StepMachine::new(&self.variant.ingest, op.builtins(self.c.now_ms))
    }

    fn resolve_machine(&self, fp: usize) -> StepMachine<'v> {
        let op = ResolveOp {
            project: self.c.project.clone(),
            fingerprint: self.c.fps[fp].clone(),
            group_id: self.c.group_ids[fp].clone(),
            group: 0,
            key: 0,
        };
        StepMachine::new(&self.variant.resolve, op.builtins(self.c.now_ms))
    }

    /// Whether the spec's Resolve is enabled on the group of `fp`: a row
    /// of the world's project and that fingerprint reads open or regressed
    /// (of several rows, as a broken file may make, any one). Rows are
    /// known by (project, fingerprint), not by id: a design may compute
    /// its own group ids.
    fn resolvable(&self, view: &GroupsView, fp: usize) -> bool {
        view.groups.iter().any(|g| {
            g.project.as_str() == Some(self.c.project.as_str())
                && g.fingerprint.as_str() == Some(self.c.fps[fp].as_str())
                && matches!(g.status.as_str(), Some("open") | Some("regressed"))
        })
    }
}

impl<'v> World for GroupsWorld<'v> {
    type State = GroupsState<'v>;
    type Choice = Choice;
    type View = GroupsView;

    fn schema(&self) -> &str {
        &self.variant.schema
    }

    fn init(&self) -> GroupsState<'v> {
        GroupsState {
            workers: self
                .c
                .queues
                .iter()
                .map(|q| Ingester {
                    at: 0,
                    machine: q.first().map(|&e| self.ingest_machine(e)),
                })
                .collect(),
            resolver: None,
            resolves_left: self.c.resolves,
            done: vec![false; self.c.events.len()],
            dirty: vec![false; self.c.fps.len()],
        }
    }

    fn view(&self, db: &Connection) -> Result<GroupsView, crate::explore::ExploreError> {
        let mut view = GroupsView::default();
        let mut stmt = db.prepare_cached(&self.variant.export_events)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let v = |i| r.get_ref(i).map(Value::from);
            view.events.push((v(0)?, v(1)?, v(2)?));
        }
        let mut stmt = db.prepare_cached(&self.variant.export_groups)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let v = |i| r.get_ref(i).map(Value::from);
            view.groups.push(GroupRow {
                id: v(0)?,
                project: v(1)?,
                fingerprint: v(2)?,
                status: v(3)?,
                event_count: v(4)?,
            });
        }
        Ok(view)
    }

    fn choices(&self, s: &GroupsState<'v>, view: &GroupsView) -> Vec<Choice> {
        let mut out: Vec<Choice> = (0..s.workers.len())
            .filter(|&w| s.workers[w].machine.is_some())
            .map(Choice::Ingest)
            .collect();
        match s.resolver {
            Some(_) => out.push(Choice::ResolverStep),
            // The spec's Resolve: enabled while budget is left, for each
            // group that reads open or regressed.
            None if s.resolves_left > 0 => out.extend(
                (0..self.c.fps.len())
                    .filter(|&fp| self.resolvable(view, fp))
                    .map(Choice::Resolve),
            ),
            None => {}
        }
        out
    }

    fn take(&self, s: &mut GroupsState<'v>, choice: &Choice, db: &Connection) -> StepLabel {
        match *choice {
            Choice::Ingest(w) => {
                let queue = &self.c.queues[w];
                let ing = &mut s.workers[w];
                let event = queue[ing.at];
                let fp = self.c.fp_of[event];
                let m = ing
                    .machine
                    .as_mut()
                    .expect("choices offers running workers");
                let name = statement(&self.variant.ingest, m);
                let (next, ran, mut said) = run_step(m, db);
                // The spec's S3: `done` and `dirty` change with the counting
                // step itself, when it changed the group's row (in a block:
                // with the block that holds it, once it committed).
                let counted = ran
                    .iter()
                    .any(|&(i, c)| i == self.variant.counting_step && c > 0);
                if next.is_some() && counted {
                    s.done[event] = true;
                    s.dirty[fp] = true;
                }
                let ended = match next {
                    Some(Next::Continue) => None,
                    Some(n) => {
                        let (kind, r) = ingest_result(m, n, self.variant.counting_step);
                        Some(match (r.accepted, r.error) {
                            (Some(true), _) => "accepted".to_string(),
                            (Some(false), _) => "duplicate (stopped)".to_string(),
                            (_, Some(e)) => format!("{kind:?}: {e}"),
                            _ => format!("{kind:?}"),
                        })
                    }
                    None => Some("fail".to_string()),
                };
                if let Some(how) = ended {
                    said.push_str(&format!("; op ends: {how}"));
                    ing.at += 1;
                    ing.machine = queue.get(ing.at).map(|&e| self.ingest_machine(e));
                }
                StepLabel {
                    actor: Self::worker_name(w),
                    statement: name,
                    subject: self.c.events[event].clone(),
                    outcome: said,
                }
            }
            Choice::Resolve(fp) => {
                s.resolves_left -= 1;
                s.resolver = Some((fp, self.resolve_machine(fp)));
                self.resolver_step(s, db)
            }
            Choice::ResolverStep => self.resolver_step(s, db),
        }
    }

    fn key(&self, s: &GroupsState<'v>, out: &mut Vec<u8>) {
        for ing in &s.workers {
            out.extend_from_slice(&(ing.at as u32).to_le_bytes());
            if let Some(m) = &ing.machine {
                machine_key(m, out);
            }
        }
        match &s.resolver {
            None => out.push(0),
            Some((fp, m)) => {
                out.push(1);
                out.extend_from_slice(&(*fp as u32).to_le_bytes());
                machine_key(m, out);
            }
        }
        out.extend_from_slice(&s.resolves_left.to_le_bytes());
        out.extend(s.done.iter().map(|&d| d as u8));
        out.extend(s.dirty.iter().map(|&d| d as u8));
    }

    fn describe(&self, s: &GroupsState<'v>) -> String {
        let workers: Vec<String> = s
            .workers
            .iter()
            .enumerate()
            .map(|(w, ing)| match &ing.machine {
                Some(m) => format!(
                    "{} at {} ({})",
                    Self::worker_name(w),
                    self.c.events[self.c.queues[w][ing.at]],
                    statement(&self.variant.ingest, m)
                ),
                None => format!("{} finished", Self::worker_name(w)),
            })
            .collect();
        let set = |bits: &[bool], names: &[String]| {
            let on: Vec<&str> = names
                .iter()
                .zip(bits)
                .filter(|(_, &b)| b)
                .map(|(n, _)| n.as_str())
                .collect();
            format!("{{{}}}", on.join(", "))
        };
        format!(
            "{}; resolves left {}; done {}; dirty {}",
            workers.join(", "),
            s.resolves_left,
            set(&s.done, &self.c.events),
            set(&s.dirty, &self.c.fps)
        )
    }

    fn check(&self, s: &GroupsState<'v>, view: &GroupsView) -> Vec<Violation> {
        explore_invariants::check(&self.c, &s.done, &s.dirty, view)
    }
}

impl<'v> GroupsWorld<'v> {
    fn resolver_step(&self, s: &mut GroupsState<'v>, db: &Connection) -> StepLabel {
        let (fp, m) = s.resolver.as_mut().expect("a resolve op is in flight");
        let fp = *fp;
        let name = statement(&self.variant.resolve, m);
        let (next, _, mut said) = run_step(m, db);
        let ended = match next {
            Some(Next::Continue) => None,
            Some(n) => {
                let (kind, r) = resolve_result(m, n);
                // The spec's Resolve clears `dirty` for the group it resolved.
                if r.resolved == Some(true) {
                    s.dirty[fp] = false;
                }
                Some(match (r.resolved, r.error) {
                    (Some(true), _) => "resolved".to_string(),
                    (_, Some(e)) => format!("{kind:?}: {e}"),
                    _ => "refused".to_string(),
                })
            }
            None => Some("fail".to_string()),
        };
        if let Some(how) = ended {
            said.push_str(&format!("; op ends: {how}"));
            s.resolver = None;
        }
        StepLabel {
            actor: "resolver".into(),
            statement: name,
            subject: self.c.group_ids[fp].clone(),
            outcome: said,
        }
    }
}
