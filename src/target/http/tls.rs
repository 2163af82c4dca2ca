//! HTTPS for every client the bench makes of a service (the HTTP target's,
//! the export read's, `check-target`'s and the fault proxy's upstream
//! client): which certificates are trusted ([`Tls`]: the system's roots,
//! plus a CA bundle file, or no verification at all for a staging
//! service), and the crypto provider every client needs
//! ([`client_builder`]).
//!
//! rustls with the `ring` provider: ring builds from a little C and
//! assembly with the system's C compiler in well under a minute on two
//! cores, where reqwest's default provider, aws-lc-rs, builds the whole of
//! AWS-LC (cmake and a large C library) and takes several times as long.
//! reqwest is built without a provider of its own (`rustls-no-provider`),
//! so the process-wide default is installed here before any client is
//! built; a client built without it panics.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use reqwest::ClientBuilder;
use std::path::{Path, PathBuf};

/// Which certificates a client trusts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// A PEM bundle of CA certificates trusted besides the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Trust any certificate for any name (a staging service with a
    /// self-signed certificate): the connection is encrypted but its peer
    /// is not checked. Reported wherever the run's target is named.
    pub insecure_skip_verify: bool,
}

/// Why a client's TLS settings cannot be used (exit 2: the scenario or the
/// command line names them).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The CA bundle cannot be read.
    #[error("cannot read the CA bundle {}: {source}", path.display())]
    Read {
        /// The bundle's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The CA bundle holds no usable certificate.
    #[error("the CA bundle {} holds no PEM certificate: {why}", path.display())]
    Bundle {
        /// The bundle's path.
        path: PathBuf,
        /// What the parser said.
        why: String,
    },
}

/// What a summary's target line adds when the peer is not verified.
pub const INSECURE_NOTE: &str =
    "TLS CERTIFICATE NOT VERIFIED (insecure_skip_verify): the service's identity is unchecked";

impl Tls {
    /// The scenario's `target.ca_file` and `target.insecure_skip_verify`, a
    /// relative `ca_file` taken from the scenario file's folder `base`.
    pub fn of_target(t: &crate::scenario::Target, base: &Path) -> Tls {
        Tls {
            ca_file: t.ca_file.as_ref().map(|f| base.join(f)),
            insecure_skip_verify: t.insecure_skip_verify,
        }
    }

    /// `builder` with these settings. Errors: the bundle cannot be read or
    /// holds no certificate.
    pub fn apply(&self, mut builder: ClientBuilder) -> Result<ClientBuilder, TlsError> {
        if let Some(path) = &self.ca_file {
            let pem = std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.clone(),
                source,
            })?;
            let bundle = |why: String| TlsError::Bundle {
                path: path.clone(),
                why,
            };
            let certs =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bundle(e.to_string()))?;
            if certs.is_empty() {
                return Err(bundle("no BEGIN CERTIFICATE block".into()));
            }
            builder = builder.tls_certs_merge(certs);
        }
        if self.insecure_skip_verify {
            builder = builder.tls_danger_accept_invalid_certs(true);
        }
        Ok(builder)
    }
}

/// Installs the ring provider as the process's default, once: reqwest
/// builds every client's TLS configuration from it (also a client of a
/// plain `http://` URL). Tests that build clients of their own call it.
pub fn install_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err: some other code installed one first; that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `reqwest::Client::builder()`, the provider installed.
pub fn client_builder() -> ClientBuilder {
    install_provider();
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_bundle_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Tls {
            ca_file: Some(dir.path().join("nope.pem")),
            ..Tls::default()
        };
        let e = missing.apply(client_builder()).unwrap_err();
        assert!(matches!(e, TlsError::Read { .. }), "{e}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = Tls {
            ca_file: Some(empty),
            ..Tls::default()
        }
        .apply(client_builder())
        .unwrap_err();
        assert!(matches!(e, TlsError::Bundle { .. }), "{e}");
    }

    #[test]
    fn a_relative_ca_file_is_the_scenario_folders() {
        let set = [
            "target.kind=\"http\"",
            "target.url=\"https://127.0.0.1:1\"",
            "target.ca_file=\"certs/ca.pem\"",
        ]
        .map(String::from);
        let (s, _) = crate::scenario::load(None, &set).unwrap();
        let tls = Tls::of_target(&s.target, Path::new("/s"));
        assert_eq!(tls.ca_file.as_deref(), Some(Path::new("/s/certs/ca.pem")));
        assert!(!tls.insecure_skip_verify);
    }
}
