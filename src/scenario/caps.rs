//! What a target can do to itself ([`Caps`]): which fault kinds the
//! nemesis can drive against it. The loader refuses a fault its target
//! cannot take (`scenario::load::faults`), and the targets
//! (`crate::target`) start only the nemeses their caps allow, from this
//! one table.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::{Target, TargetKind};
use crate::fault_kind::FaultKind;

/// The fault kinds a target can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Crash and pause between steps: the in-process runtimes' step hooks,
    /// or the spawned reference server's test-only fault hook.
    pub steps: bool,
    /// The fault proxy between the bench and an HTTP service.
    pub proxy: bool,
    /// SIGKILL and restart of the spawned reference server.
    pub kill: bool,
    /// A connection holding the write lock of a database the bench can
    /// open (the `sqlite` target's, or the spawned server's).
    pub lock: bool,
}

impl Caps {
    /// The in-process SQLite database: step hooks and locks.
    pub const SQLITE: Caps = Caps {
        steps: true,
        proxy: false,
        kill: false,
        lock: true,
    };
    /// The spawned reference server: every kind.
    pub const SPAWNED: Caps = Caps {
        steps: true,
        proxy: true,
        kill: true,
        lock: true,
    };
    /// An external service (`target.url`): only the proxy reaches it.
    pub const EXTERNAL: Caps = Caps {
        steps: false,
        proxy: true,
        kill: false,
        lock: false,
    };

    /// Whether a fault of `kind` can act on this target.
    pub fn supports(self, kind: FaultKind) -> bool {
        match kind {
            FaultKind::Crash | FaultKind::Pause => self.steps,
            FaultKind::Proxy => self.proxy,
            FaultKind::Kill => self.kill,
            FaultKind::Lock => self.lock,
        }
    }
}

impl Target {
    /// What this target can take: the `sqlite` target's, the spawned
    /// reference server's, or an external service's caps.
    pub fn caps(&self) -> Caps {
        match (self.kind, self.spawn) {
            (TargetKind::Sqlite, _) => Caps::SQLITE,
            (TargetKind::Http, true) => Caps::SPAWNED,
            (TargetKind::Http, false) => Caps::EXTERNAL,
        }
    }
}
