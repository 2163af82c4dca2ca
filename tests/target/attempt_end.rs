//! A failed outbox delivery names how it ended in the reference server's
//! 503 (`x-specstorm-attempt-end`), and the bench's client reads the end
//! from that name: the outbox run counts a lost compare-and-swap by it,
//! never by the error's words.

use crate::common::http::client;
use crate::common::{root, Server};
use serde_json::json;
use specstorm::target::http::client::HttpClient;
use specstorm::workload::outbox::http_client::handle;
use specstorm::workload::outbox::AttemptEnd;
use std::time::Duration;

/// outbox-protocol with a state commit that always loses its
/// compare-and-swap: it appends version 0, the head row that is always
/// there.
fn always_losing(dir: &std::path::Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("targets/sqlite/outbox-protocol.sql")).unwrap();
    let lost = text.replace(
        "VALUES (:base_ver + 1, :msg_id, :tx_id, 'change');",
        "VALUES (0, :msg_id, :tx_id, 'change');",
    );
    assert_ne!(lost, text, "the state commit's values moved");
    let path = dir.join("outbox-always-lost.sql");
    std::fs::write(&path, lost).unwrap();
    path
}

/// A server of [`always_losing`] with fault hooks, in `dir`.
fn losing_server(dir: &std::path::Path) -> Server {
    let variant = always_losing(dir);
    Server::start_with(
        &variant.to_string_lossy(),
        &dir.join("t.db"),
        &["--fault-hooks"],
    )
}

#[test]
fn the_reference_server_names_how_a_failed_delivery_ended() {
    let dir = tempfile::tempdir().unwrap();
    let s = losing_server(dir.path());
    let c = client();
    let post = |id: i64, hook: Option<&str>| {
        let mut req = c
            .post(format!("{}/v1/messages", s.url))
            .json(&json!({"id": id, "dup": 1}));
        if let Some(h) = hook {
            req = req.header("x-specstorm-fault", h);
        }
        let r = req.send().unwrap();
        let end = r
            .headers()
            .get("x-specstorm-attempt-end")
            .map(|v| v.to_str().unwrap().to_owned());
        (r.status().as_u16(), end)
    };
    assert_eq!(post(1, None), (503, Some("cas_lost".to_owned())));
    assert_eq!(
        post(2, Some("crash-after=load_state")),
        (503, Some("crashed".to_owned()))
    );
}

#[test]
fn the_bench_s_client_reads_the_end_from_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let s = losing_server(dir.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let hc = HttpClient::new(&s.url, Duration::from_secs(5), Duration::from_secs(30)).unwrap();
    let a = rt.block_on(handle(&hc, 1, 1, None));
    assert_eq!(a.attempt_end, Some(AttemptEnd::CasLost), "{a:?}");
}

#[test]
fn an_attempt_end_is_known_by_its_name_only() {
    for end in AttemptEnd::ALL {
        assert_eq!(AttemptEnd::from_name(end.name()), Some(end));
    }
    assert_eq!(AttemptEnd::from_name("cas lost at step state_commit"), None);
}
