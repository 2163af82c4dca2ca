//! The TLA+ trace module and TLC configs `specstorm validate` writes: the
//! spec instantiated with the run's world (its world definitions
//! overridden with `<-`), the recorded steps as a sequence literal, and a
//! next-state relation that takes one step at a time, each through the
//! spec's own action for its role with the observed values required, in
//! any order the steps' intervals allow, one order per class of orders
//! that differ only by independent steps (docs/validate.md).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::trace::{Names, Observed, Role, Trace};
use std::fmt::Write;

/// The final tables, as read through the variant's export queries.
#[derive(Debug, Clone, Default)]
pub struct FinalTables {
    /// `error_events` ids.
    pub events: Vec<String>,
    /// `error_groups` rows: id, status (None: not text), count (None: not
    /// an integer).
    pub groups: Vec<(String, Option<String>, Option<i64>)>,
}

/// The definitions of the spec overridden in the configs, each with the
/// trace module's definition that replaces it (docs/validate.md says why
/// each, and why the actions stay the spec's).
pub const OVERRIDES: [(&str, &str); 7] = [
    ("Events", "TEvents"),
    ("Fps", "TFps"),
    ("FpOf", "TFpOf"),
    ("Workers", "TWorkers"),
    ("Queue", "TQueue"),
    ("QLen", "TQLen"),
    ("Active", "TActive"),
];

/// The spec's invariants, each checked in every state of the trace.
pub const INVARIANTS: [&str; 4] = [
    "TypeOK",
    "OneGroupPerFingerprint",
    "CountExact",
    "NoMissedRegression",
];

/// The module and its configs.
#[derive(Debug, Clone)]
pub struct Written {
    /// The module's text.
    pub module: String,
    /// The config that asks for an order that never violates an invariant.
    pub good_cfg: String,
    /// The config that asks for any order that is a behavior.
    pub any_cfg: String,
    /// Per invariant of the spec, the config that asks for an order that
    /// never violates that one (to name what every order violates).
    pub keeps_cfgs: Vec<(&'static str, String)>,
    /// Short names to the run's ids (events, groups, workers).
    pub names: Vec<(String, String)>,
    /// Steps in the trace.
    pub steps: usize,
    /// The module's numbers of events and groups, to the run's ids.
    pub ids: std::collections::BTreeMap<i64, String>,
    /// The configs' `CONSTANTS` section (the run's world), for the
    /// witness configs written later ([`witness_cfg`]).
    pub constants: String,
}

fn tla_str(s: &str) -> String {
    // Short names only ever hold letters and digits; statuses are the
    // run's text, escaped as TLA+ strings are.
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn set<I: IntoIterator<Item = String>>(items: I) -> String {
    let v: Vec<String> = items.into_iter().collect();
    format!("{{{}}}", v.join(", "))
}

/// Writes the trace module `name` over the spec module `spec`.
pub fn write(
    name: &str,
    spec: &str,
    trace: &Trace,
    variant: &str,
    tables: &FinalTables,
    max_states: Option<u64>,
) -> Written {
    let (mut ev, mut gr, mut wk) = (Names::default(), Names::default(), Names::default());
    for (w, q) in &trace.queues {
        wk.of("w", &w.to_string());
        for e in q {
            ev.of("e", e);
            gr.of("g", &trace.group_of[e]);
        }
    }
    for g in &trace.resolved_groups {
        gr.of("g", g);
    }
    let mut m = String::new();
    let _ = writeln!(m, "---- MODULE {name} ----");
    let _ = writeln!(
        m,
        "\\* Written by `specstorm validate`: a recorded run as a trace of {spec}.\n\
         \\* docs/validate.md explains every definition below."
    );
    let _ = writeln!(m, "EXTENDS {spec}, Integers, TLC\n");
    let _ = writeln!(m, "VARIABLES taken, asleep, lo\n");
    let _ = writeln!(
        m,
        "\\* The run's world (replaces the spec's small one; see the configs)."
    );
    // Events and groups are numbers in the module (event `eK` is K, group
    // `gK` is E+K for E events): `FpOf` is then a tuple, which TLC applies
    // in constant time (a function built of `@@` is searched), and an event
    // never equals a group.
    let n_ev = ev.list.len();
    let evn = |short: &str| short[1..].to_string();
    let grn = |short: &str| (n_ev + short[1..].parse::<usize>().unwrap_or(0)).to_string();
    let _ = writeln!(
        m,
        "\\* Events are 1..{n_ev} (`e1`.. in validate.json), groups {}..{} (`g1`..).",
        n_ev + 1,
        n_ev + gr.list.len()
    );
    let _ = writeln!(m, "TEvents == 1..{n_ev}");
    let _ = writeln!(m, "TFps == {}", set(gr.list.iter().map(|p| grn(&p.0))));
    let fp_of: Vec<String> = ev
        .list
        .iter()
        .map(|(_, id)| grn(gr.get(&trace.group_of[id]).map_or("g0", |g| g)))
        .collect();
    let _ = writeln!(m, "TFpOf == <<{}>>", fp_of.join(", "));
    let _ = writeln!(
        m,
        "TWorkers == {}",
        set(wk.list.iter().map(|p| tla_str(&p.0)))
    );
    let queues: Vec<String> = trace
        .queues
        .iter()
        .map(|(w, q)| {
            let items: Vec<String> = q.iter().map(|e| evn(&ev.of("e", e))).collect();
            format!(
                "{} :> <<{}>>",
                tla_str(&wk.of("w", &w.to_string())),
                items.join(", ")
            )
        })
        .collect();
    let _ = writeln!(
        m,
        "TQueue == {}",
        if queues.is_empty() {
            "[w \\in {} |-> <<>>]".to_string()
        } else {
            format!("({})", queues.join(") @@ ("))
        }
    );
    let qlen = trace.queues.values().map(Vec::len).max().unwrap_or(0);
    let _ = writeln!(m, "TQLen == {qlen}");
    let _ = writeln!(m, "TActive(w) == idx[w] <= Len(TQueue[w])\n");

    // Interval ends as ranks: TLC's integers are 32-bit, the ns are not.
    let mut times: Vec<u64> = trace.steps.iter().flat_map(|s| [s.start, s.end]).collect();
    times.sort_unstable();
    times.dedup();
    let rank = |t: u64| times.binary_search(&t).unwrap_or(0) + 1;
    let mut rw = Names::default();
    let _ = writeln!(
        m,
        "\\* The recorded steps in start order: role r, worker w, attempt a, what it touches x\n\
         \\* (an event id for s1, else a group), what it observed, and its interval [s, e]\n\
         \\* as ranks of the run's monotonic ns."
    );
    let mut rows = Vec::new();
    for s in &trace.steps {
        let worker = if s.role == Role::S1 || s.attempt > 0 {
            wk.of("w", &s.worker.to_string())
        } else {
            rw.of("r", &s.worker.to_string())
        };
        let touches = if s.role == Role::S1 {
            evn(&ev.of("e", &s.touches))
        } else {
            grn(&gr.of("g", &s.touches))
        };
        let obs = match &s.observed {
            Observed::Changes(c) => format!("ch |-> {c}"),
            Observed::Status(st) => format!("st |-> {}", tla_str(st.as_deref().unwrap_or("none"))),
            Observed::Count(n) => format!("n |-> {n}"),
            Observed::Refusal => "ch |-> 0".into(),
            Observed::Probe(None) => "st |-> \"none\", n |-> -1".into(),
            Observed::Probe(Some((st, n))) => format!("st |-> {}, n |-> {n}", tla_str(st)),
            // `validate` refuses such a trace before writing it.
            Observed::Unrecorded => "st |-> \"none\"".into(),
        };
        rows.push(format!(
            "  [r |-> \"{}\", w |-> {}, a |-> {}, x |-> {}, {obs}, s |-> {}, e |-> {}] \\* op {} {}",
            s.role.name(),
            tla_str(&worker),
            s.attempt,
            touches,
            rank(s.start),
            rank(s.end),
            s.op,
            s.name
        ));
    }
    let _ = writeln!(m, "St == <<");
    for (i, r) in rows.iter().enumerate() {
        // The comment after a row's comma: TLA+ comments run to the line's end.
        let (rec, note) = r.split_once(" \\* ").unwrap_or((r, ""));
        let comma = if i + 1 < rows.len() { "," } else { "" };
        let _ = writeln!(m, "{rec}{comma} \\* {note}");
    }
    let _ = writeln!(m, ">>");
    let _ = writeln!(m, "N == Len(St)\n");

    let _ = writeln!(
        m,
        "\\* Immediate predecessors in time: the steps that ended before step i began and\n\
         \\* after which no other step both began and ended before it."
    );
    let pre = predecessors(trace);
    let pre_text: Vec<String> = pre
        .iter()
        .map(|p| set(p.iter().map(|j| (j + 1).to_string())))
        .collect();
    let _ = writeln!(m, "Pre == <<{}>>\n", pre_text.join(", "));
    let _ = writeln!(
        m,
        "\\* Per step k, the last step that began no later than k ended: while k is the\n\
         \\* first step not taken, no later one can be (k ended before it began)."
    );
    let win: Vec<String> = window(trace).iter().map(|w| (w + 1).to_string()).collect();
    let _ = writeln!(m, "Win == <<{}>>\n", win.join(", "));

    // An id no step named is -1, which no event or group is.
    let fe = tables
        .events
        .iter()
        .map(|id| ev.get(id).map_or("-1".to_string(), |s| evn(s)));
    let _ = writeln!(
        m,
        "\\* The final tables, as the run's export queries read them."
    );
    let _ = writeln!(m, "FinalEvents == {}", set(fe));
    let fg = tables.groups.iter().map(|(id, st, n)| {
        let g = gr.get(id).map_or("-1".to_string(), |g| grn(g));
        format!(
            "[id |-> {g}, fp |-> {g}, status |-> {}, count |-> {}]",
            tla_str(st.as_deref().unwrap_or("(not text)")),
            n.unwrap_or(-1),
        )
    });
    let _ = writeln!(m, "FinalGroups == {}\n", set(fg));
    m.push_str(RELATION);
    if let Some(n) = max_states {
        let _ = writeln!(m, "Bound == TLCGet(\"distinct\") < {n}");
    }
    let _ = writeln!(m, "====");

    let mut constants = format!(
        "CONSTANTS\n  Variant = \"{variant}\"\n  MaxResolves = {}\n",
        trace.resolves
    );
    for (d, t) in OVERRIDES {
        let _ = writeln!(constants, "  {d} <- {t}");
    }
    let bound = if max_states.is_some() {
        "  Bound\n"
    } else {
        ""
    };
    let good_cfg = format!(
        "\\* Is there an order of the recorded steps that is a behavior of the spec,\n\
         \\* ends in the final tables and never violates an invariant? A violation of\n\
         \\* NoGoodOrder is such an order.\n{constants}\nINIT TInit\nNEXT TNext\n\
         CONSTRAINT\n  SpecInvariants\n{bound}\nINVARIANT NoGoodOrder\n"
    );
    let keeps_cfgs = INVARIANTS
        .iter()
        .map(|inv| {
            let cfg = format!(
                "\\* Is there an order of the recorded steps that is a behavior of the spec,\n\
                 \\* ends in the final tables and never violates {inv}? A violation of\n\
                 \\* NoOrderKeeps_{inv} is such an order.\n{constants}\nINIT TInit\n\
                 NEXT TNext\nCONSTRAINT\n  {inv}\n{bound}\nINVARIANT NoOrderKeeps_{inv}\n"
            );
            (*inv, cfg)
        })
        .collect();
    let any_cfg = format!(
        "\\* Is there an order of the recorded steps that is a behavior of the spec and\n\
         \\* ends in the final tables? A violation of NoCompleteOrder is such an order.\n\
         {constants}\nINIT TInit\nNEXT TNext\n{}\nINVARIANT NoCompleteOrder\n",
        if bound.is_empty() {
            String::new()
        } else {
            format!("CONSTRAINT\n{bound}")
        }
    );
    let ids = ev
        .list
        .iter()
        .map(|(s, id)| (evn(s), id))
        .chain(gr.list.iter().map(|(s, id)| (grn(s), id)))
        .filter_map(|(n, id)| Some((n.parse().ok()?, id.clone())))
        .collect();
    let mut names = Vec::new();
    for (prefix, n) in [
        ("event ", &ev),
        ("group ", &gr),
        ("worker ", &wk),
        ("resolver ", &rw),
    ] {
        names.extend(
            n.list
                .iter()
                .map(|(s, id)| (s.clone(), format!("{prefix}{id}"))),
        );
    }
    Written {
        module: m,
        good_cfg,
        any_cfg,
        keeps_cfgs,
        names,
        steps: trace.steps.len(),
        ids,
        constants,
    }
}

/// A module `name` over the trace module `trace_name` whose next-state
/// relation takes the steps of `order` (1-based indexes into `St`) one
/// after another, each through the trace's own `Take`: the one order TLC
/// printed as a witness, walked again so that TLC can say in which of its
/// states an invariant first fails.
pub fn witness_module(name: &str, trace_name: &str, order: &[usize]) -> String {
    let items: Vec<String> = order.iter().map(usize::to_string).collect();
    format!(
        "---- MODULE {name} ----\n\
         \\* Written by `specstorm validate`: one order of the trace, step by step.\n\
         EXTENDS {trace_name}, FiniteSets, Sequences\n\n\
         Order == <<{}>>\n\
         WNext == LET k == Cardinality(taken) + 1 IN k <= Len(Order) /\\ Take(Order[k])\n\
         ====\n",
        items.join(", ")
    )
}

/// The config that walks [`witness_module`]'s order and checks
/// `invariants` in each of its states.
pub fn witness_cfg(constants: &str, invariants: &[&str]) -> String {
    format!(
        "\\* Where, in one order of the recorded steps, does an invariant first fail?\n\
         {constants}\nINIT TInit\nNEXT WNext\nINVARIANT\n  {}\n",
        invariants.join("\n  ")
    )
}

/// Per step (0-based, in `trace.steps` order), its immediate predecessors
/// in the interval order: j ended before i began, and no k began after j
/// ended and ended before i began. Taking a step only after these keeps
/// every earlier-ended step before it, by induction.
pub fn predecessors(trace: &Trace) -> Vec<Vec<usize>> {
    let spans: Vec<(u64, u64)> = trace.steps.iter().map(|s| (s.start, s.end)).collect();
    crate::replay_order::predecessors(&spans)
}

/// Per step k (0-based, start order), the last step (0-based) that began
/// no later than k ended: while k is the first step not taken, every later
/// step has k among the steps that ended before it began, so none of them
/// can be taken. TLC looks only at steps up to there.
pub fn window(trace: &Trace) -> Vec<usize> {
    let s = &trace.steps;
    s.iter()
        .map(|k| s.partition_point(|i| i.start <= k.end).saturating_sub(1))
        .collect()
}

/// The trace's next-state relation, its completion and what TLC checks.
const RELATION: &str = r#"\* Two steps are dependent when they share a worker or what they touch, or
\* when their intervals order them; independent steps commute in the spec.
HB(i, j) == St[i].e < St[j].s
Dep(i, j) == St[i].w = St[j].w \/ St[i].x = St[j].x \/ HB(i, j) \/ HB(j, i)

\* The spec's action for step i's role, with what it observed required.
Act(i) ==
  LET t == St[i] IN
  \/ /\ t.r = "s1" /\ idx[t.w] = t.a /\ pc[t.w] = "s1"
     /\ t.ch = IF CurEv(t.w) \in events THEN 0 ELSE 1
     /\ S1(t.w)
  \/ /\ t.r = "s2" /\ idx[t.w] = t.a /\ pc[t.w] = "s2"
     /\ t.ch = IF HasGroup(CurFp(t.w)) THEN 0 ELSE 1
     /\ S2(t.w)
  \/ /\ t.r = "s3" /\ idx[t.w] = t.a /\ pc[t.w] = "s3" /\ t.ch = 1
     /\ S3Atomic(t.w)
  \/ /\ t.r = "s3r" /\ idx[t.w] = t.a /\ pc[t.w] = "s3"
     /\ HasGroup(CurFp(t.w)) /\ GrpOf(CurFp(t.w)).status = t.st
     /\ S3ReadNaive(t.w)
  \/ /\ t.r = "s3w" /\ idx[t.w] = t.a /\ pc[t.w] = "s3w" /\ t.ch = 1
     /\ S3WriteNaive(t.w)
  \/ /\ t.r = "res" /\ HasGroup(t.x)
     /\ LET g == GrpOf(t.x) IN
          /\ g.status \in {"open", "regressed"} /\ g.count = t.n
          /\ Resolve
          /\ groups' = (groups \ {g}) \cup {[g EXCEPT !.status = "resolved"]}
  \/ /\ t.r = "ref"
     /\ IF HasGroup(t.x) THEN GrpOf(t.x).status = "resolved" ELSE TRUE
     /\ UNCHANGED vars
  \/ /\ t.r = "probe"
     /\ IF t.st = "none" THEN ~HasGroup(t.x)
        ELSE HasGroup(t.x) /\ GrpOf(t.x).status = t.st /\ GrpOf(t.x).count = t.n
     /\ UNCHANGED vars

\* One order per class of orders that differ by swapping adjacent independent
\* steps: the smallest in index order (a step goes to sleep when a later,
\* independent one is taken before it, and wakes when a step dependent on it
\* is taken; a sleeping step is not taken).
\* lo is the first step not taken (a function of taken, so no extra states):
\* the steps before it are all taken, and those after Win[lo] wait for it.
FirstOut(S, k) == CHOOSE m \in k..(N + 1) : m \notin S /\ (k..(m - 1)) \subseteq S
Take(i) ==
  /\ i \notin taken /\ i \notin asleep
  /\ Pre[i] \subseteq taken
  /\ Act(i)
  /\ taken' = taken \cup {i}
  /\ lo' = IF i = lo THEN FirstOut(taken', lo + 1) ELSE lo
  /\ asleep' = {j \in asleep : ~Dep(i, j)}
               \cup {j \in (lo..(i - 1)) \ taken : ~Dep(i, j)}

TInit == Init /\ taken = {} /\ asleep = {} /\ lo = 1
TNext == \E i \in lo..(IF lo > N THEN 0 ELSE Win[lo]) : Take(i)

Complete == taken = 1..N /\ events = FinalEvents /\ groups = FinalGroups
SpecInvariants == TypeOK /\ OneGroupPerFingerprint /\ CountExact /\ NoMissedRegression
\* Violated: an order exists that is a behavior, reaches the final tables and
\* never violates an invariant.
NoGoodOrder == ~(Complete /\ SpecInvariants)
\* Violated: an order exists that is a behavior and reaches the final tables.
NoCompleteOrder == ~Complete
\* Violated: an order exists that is a behavior, reaches the final tables and
\* never violates the one invariant named.
NoOrderKeeps_TypeOK == ~(Complete /\ TypeOK)
NoOrderKeeps_OneGroupPerFingerprint == ~(Complete /\ OneGroupPerFingerprint)
NoOrderKeeps_CountExact == ~(Complete /\ CountExact)
NoOrderKeeps_NoMissedRegression == ~(Complete /\ NoMissedRegression)
"#;
