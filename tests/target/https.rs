//! HTTPS end to end: the reference server behind a TLS terminator of the
//! test's own, whose certificate is signed by a certificate authority the
//! test makes (rcgen). A run, `check-target` and the fault proxy's
//! upstream trust it through `target.ca_file` (`--ca-file`), refuse it
//! without (a certificate error, exit 3), or skip verification when told
//! to, and say so. The TLS keys' own rules (`file:line` errors) are here
//! too.

use crate::common::{specstorm, summary, text, Server};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use specstorm::scenario::load_str;
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls;

/// A CA (its PEM) and a server certificate for 127.0.0.1 and localhost
/// signed by it (DER chain and key).
struct Certs {
    ca_pem: String,
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
}

fn certs() -> Certs {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "specstorm test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    Certs {
        ca_pem: ca_cert.pem(),
        chain: vec![leaf_cert.der().clone()],
        key: rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
    }
}

/// Listens on a free loopback port, ends TLS with `certs` and passes each
/// connection on to `upstream` (`127.0.0.1:PORT`, plain HTTP). Returns the
/// port; the terminator lives as long as the test binary.
fn terminator(certs: &Certs, upstream: String) -> u16 {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs.chain.clone(), certs.key.clone_key())
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
                tokio::spawn(async move {
                    // A client that refused the certificate ends here.
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    if let Ok(mut up) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                    }
                });
            }
        });
    });
    port
}

/// The reference server behind a terminator: (server, https URL, CA PEM).
fn https_server() -> (Server, String, String) {
    let server = Server::start("groups-atomic");
    let upstream = server.url.trim_start_matches("http://").to_string();
    let c = certs();
    let port = terminator(&c, upstream);
    (server, format!("https://127.0.0.1:{port}"), c.ca_pem)
}

/// A small groups scenario against `url`, with `extra` in its `[target]`,
/// and a latency toxic, so that the load goes through the fault proxy.
fn scenario(url: &str, extra: &str) -> String {
    format!(
        "workload = \"groups\"\nvariant = \"groups-atomic\"\nseed = 1\n\n\
         [target]\nkind = \"http\"\nurl = \"{url}\"\n{extra}\n\
         [load]\ningesters = 8\nresolvers = 2\n\n[stop]\nevents = 2000\n\n\
         [keys]\nskew = \"hot\"\nhot_groups = 4\nhot_fraction = 0.5\n\n\
         [resolve]\ninterval = \"0s\"\n\n\
         [[faults]]\nkind = \"proxy\"\ntoxic = \"latency\"\nprobability = 0.2\ndelay = \"1ms\"\n"
    )
}

/// `specstorm run FILE -q --out DIR/NAME` of `text` written to DIR/NAME.toml.
fn run(dir: &Path, name: &str, text: &str) -> std::process::Output {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let out = dir.join(name);
    specstorm(&[
        "run",
        file.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn a_run_over_https_trusts_the_scenarios_ca_and_refuses_an_unknown_one() {
    let (_server, url, ca) = https_server();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("ca.pem"), &ca).unwrap();

    // Relative to the scenario file's folder; through the fault proxy.
    let o = run(
        tmp.path(),
        "trusted",
        &scenario(&url, "ca_file = \"ca.pem\""),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = summary(&tmp.path().join("trusted"));
    assert_eq!(s["exit"]["code"], 0, "{s}");
    assert_eq!(s["target"], format!("http {url}"), "{s}");
    assert!(s["faults_injected"]["proxy"].as_u64().unwrap() > 0, "{s}");
    // The saved scenario names the bundle absolutely: it runs again from
    // the run folder.
    let saved = std::fs::read_to_string(tmp.path().join("trusted/scenario.toml")).unwrap();
    let abs = std::fs::canonicalize(tmp.path()).unwrap().join("ca.pem");
    assert!(saved.contains(&*abs.to_string_lossy()), "{saved}");

    // The same service without the CA: its certificate is refused.
    let o = run(tmp.path(), "untrusted", &scenario(&url, ""));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("certificate") && err.contains("UnknownIssuer"),
        "{err}"
    );
    assert_eq!(summary(&tmp.path().join("untrusted"))["exit"]["code"], 3);
}

#[test]
fn insecure_skip_verify_runs_and_every_summary_says_so() {
    let (_server, url, _) = https_server();
    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        "insecure",
        &scenario(&url, "insecure_skip_verify = true"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = summary(&tmp.path().join("insecure"));
    let target = s["target"].as_str().unwrap();
    assert!(
        target.starts_with(&format!("http {url}")) && target.contains("NOT VERIFIED"),
        "{target}"
    );
    assert_eq!(
        s["resolved_scenario"]["target"]["insecure_skip_verify"],
        true
    );
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(shown.contains("NOT VERIFIED"), "{shown}");
}

#[test]
fn check_target_over_https() {
    let (_server, url, ca) = https_server();
    let tmp = tempfile::tempdir().unwrap();
    let ca_file = tmp.path().join("ca.pem");
    std::fs::write(&ca_file, &ca).unwrap();
    let ca_file = ca_file.to_str().unwrap();

    let o = specstorm(&["check-target", &url, "--ca-file", ca_file]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let o = specstorm(&["check-target", &url]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("UnknownIssuer"), "{}", text(&o));

    let o = specstorm(&["check-target", &url, "--insecure-skip-verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let first = String::from_utf8_lossy(&o.stdout);
    let first = first.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("# WARNING") && first.contains("NOT VERIFIED"),
        "{first}"
    );

    let o = specstorm(&["check-target", &url, "--ca-file", "/nonexistent/ca.pem"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("/nonexistent/ca.pem"), "{}", text(&o));
}

#[test]
fn an_unreadable_ca_file_is_the_scenarios_fault() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        "missing",
        &scenario("https://127.0.0.1:1", "ca_file = \"nope.pem\""),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("target.ca_file") && err.contains("nope.pem"),
        "{err}"
    );
}

#[test]
fn the_tls_keys_are_checked_with_their_line() {
    let file = Path::new("scenarios/tls.toml");
    let load = |target: &str| {
        let text = format!("[target]\n{target}");
        load_str("test", Some(file), &text, &[])
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let ok = "kind = \"http\"\nurl = \"https://h:1\"\n";
    assert_eq!(load(&format!("{ok}ca_file = \"ca.pem\"\n")), Ok(()));
    assert_eq!(load(&format!("{ok}insecure_skip_verify = true\n")), Ok(()));
    let cases = [
        (
            format!("{ok}ca_file = \"\"\n"),
            "scenarios/tls.toml:4: `target.ca_file` must not be empty",
        ),
        (
            format!("{ok}ca_file = \"ca.pem\"\ninsecure_skip_verify = true\n"),
            "scenarios/tls.toml:5: give either `target.ca_file`",
        ),
        (
            format!("{ok}insecure_skip_verify = \"yes\"\n"),
            "scenarios/tls.toml:4:",
        ),
        (
            "kind = \"sqlite\"\nca_file = \"ca.pem\"\n".into(),
            "scenarios/tls.toml:3: `target.ca_file` only applies to kind = \"http\"",
        ),
        (
            "kind = \"http\"\nspawn = true\ninsecure_skip_verify = true\n".into(),
            "scenarios/tls.toml:4: `target.insecure_skip_verify` applies to an https://",
        ),
        (
            "kind = \"http\"\nurl = \"ftp://h:1\"\n".into(),
            "scenarios/tls.toml:3: `target.url` must start with http:// or https://",
        ),
    ];
    for (text, want) in cases {
        let e = load(&text).unwrap_err();
        assert!(e.starts_with(want), "{text}\n{e}");
    }
}
