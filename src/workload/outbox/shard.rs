//! A shard of an outbox run (`specstorm run --shard i/n --run-id ID` on
//! `workload = "outbox"`): the checks before anything runs ([`check`]) and
//! before its load ([`refuse_used`]). The shard's queue is
//! [`crate::workload::outbox::runtime::Queue::sharded`] (the messages it owns,
//! [`Shard::owns_message`]); its merge is [`crate::workload::outbox::merge`].
//!
//! The outbox tables have no project to namespace a run in: message ids
//! are 1..=M and `state_log` is one chain of versions for the whole
//! service. So the shards of a run do not share a namespace, as groups'
//! do: they share the service, which must hold no row of another run, and
//! split the message ids between them (shard i of n owns the ids m with
//! (m - 1) mod n = i). The run id only ties the shards together for the
//! merge (it is in every shard's history header).
//!
//! App layer, beside the outbox runner: imports the config, the shard
//! model, the outbox tables and [`crate::prepare`]'s flag check.

use crate::prepare::RunError;
use crate::scenario::Scenario;
use crate::shard::Shard;
use crate::workload::outbox::checker::OutboxTables;
use crate::workload::outbox::config::OutboxConfig;

/// Checks `--shard` and `--run-id` of an outbox scenario, before anything
/// runs: as groups' ([`crate::prepare::shard_flags`]: both or neither, a
/// run id of 1 to 40 of `A-Z a-z 0-9 _ -`, an external HTTP service given
/// by `target.url`), and at least one message id per shard. Errors (exit
/// 2): the reason, naming the flag or the scenario key.
pub fn check(s: &Scenario, shard: Option<Shard>, run_id: Option<&str>) -> Result<(), RunError> {
    let Some((shard, _)) = crate::prepare::shard_flags(s, shard, run_id)? else {
        return Ok(());
    };
    let messages = s.part::<OutboxConfig>().map_or(0, |o| o.messages);
    if shard.share(messages) == 0 {
        return Err(RunError::Input(format!(
            "outbox.messages = {messages} cannot be split into {} shards (each shard sends \
             the message ids m with (m - 1) mod {} = its index, and needs at least one)",
            shard.count, shard.count
        )));
    }
    Ok(())
}

/// What a shard finds in the target's tables before its load: rows no
/// sibling of this run can have written. A sibling writes only rows of
/// the message ids it owns, in 1..=`messages`; so a row of this shard's
/// own ids, or of an id no shard of the run owns (below 1, above M, or
/// none, the head row at version 0 apart), was there before the run (an
/// earlier run, a run id used before, a target not reset).
///
/// Checking only such rows keeps the check free of races with the
/// siblings, and it is enough: every row of an earlier run is refused by
/// some shard, since every message id of 1..=M is owned by one shard,
/// which looks before its own load, and rows are never deleted (the
/// protocol only appends and inserts). So when every shard of a run got
/// past this check, the service held no row of another run when the run
/// began ([`crate::workload::outbox::merge`] relies on it).
///
/// Errors (exit 2): how many rows, and which shard found them.
pub fn refuse_used(
    t: &OutboxTables,
    shard: Shard,
    messages: u64,
    url: &str,
) -> Result<(), RunError> {
    // A sibling's row: a message id of the run that another shard owns.
    let siblings = |m: Option<i64>| {
        m.is_some_and(|m| {
            (1..=messages as i64).contains(&m) && !Shard::owns_message(Some(shard), m)
        })
    };
    let foreign = t
        .state_log
        .iter()
        .filter(|r| r.ver != Some(0) && !siblings(r.msg_id))
        .count()
        + t.outbox
            .iter()
            .flatten()
            .filter(|(m, _)| !siblings(*m))
            .count()
        + t.out_queue.iter().filter(|r| !siblings(r.msg_id)).count()
        + t.processed.iter().filter(|(m, _)| !siblings(*m)).count();
    if foreign > 0 {
        return Err(RunError::Input(format!(
            "{url} already holds {foreign} outbox row(s) that no other shard of this run can \
             have written (rows of the message ids of shard {}/{}, m with (m - 1) mod {} = {}, \
             or of ids outside 1..={messages}): the run id was used before, or the service \
             holds another run's rows. An outbox service has no namespace: give every sharded \
             run a fresh --run-id and a fresh service (POST /v1/reset where it offers one)",
            shard.index, shard.count, shard.count, shard.index
        )));
    }
    Ok(())
}
