//! The outbox workload's request to an HTTP target: one delivery attempt
//! (`[api.handle]`, the contract's `POST /v1/messages` by default), built
//! from the scenario's mapping and sent through the target's generic
//! client ([`HttpClient::send`]), and its answer read into the op's
//! completion, with how the attempt ended where the reference server
//! names it ([`crate::workload::attempt_end::AttemptEnd`]).
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use crate::history::{CompletionType, OpResult};
use crate::scenario::api::Meaning;
use crate::target::http::client::{by_meaning, now_ms, Answer, HttpClient, Tag};
use crate::workload::outbox::api::HandleMapping;

/// One delivery attempt of message `msg_id`, duplicate `dup`. An answer
/// whose status means `ok` and that passes `acked` (contract: 200
/// `{"acked": true, "sent": ..}`) is ok, with `sent` as `[msg_id, ver]`
/// where the answer names it; `info` (5xx, a timeout, a reset): info (the
/// server may have run any prefix of its steps); `fail` (400/413/422, a
/// refused connection): fail; `retry` (429): fail; anything else: info,
/// non-conforming. `tag` (None outside a run) names the op to the fault
/// proxy and carries the fault hook.
pub async fn handle(client: &HttpClient, msg_id: i64, dup: u32, tag: Option<&Tag>) -> Answer {
    let h = HandleMapping::of(client.mapping());
    let (m, d, now) = (msg_id.to_string(), dup.to_string(), now_ms().to_string());
    let vars = [
        ("msg_id", m.as_str()),
        ("dup_id", d.as_str()),
        ("now_ms", now.as_str()),
    ];
    let reply = match client.send(&h.request, &vars, None, tag, "handle").await {
        Ok(r) => r,
        Err(a) => return client.redacted(a),
    };
    let (status, text) = (reply.status, &reply.body);
    let what = h.request.what.as_str();
    let answer = match h.codes.meaning(status.as_u16()) {
        Some(Meaning::Ok) => match h.read_ok(text) {
            Ok(sent) => Answer::new(
                CompletionType::Ok,
                OpResult {
                    sent,
                    ..Default::default()
                },
            ),
            Err(_) => Answer::nonconforming(what, status, text),
        },
        other => by_meaning(other, status, text, reply.retry_after, what),
    };
    client.redacted(Answer {
        // The attempt's end, where the reference server names it.
        attempt_end: reply.attempt_end,
        ..answer
    })
}
