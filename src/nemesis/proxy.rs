//! (stub) proxy fault.

use super::Recorder;

/// (stub until the proxy lands)
pub struct FaultProxy {
    /// Its URL.
    pub url: String,
}

impl FaultProxy {
    /// Stub.
    pub fn start(
        upstream: &str,
        _recorder: Recorder,
        _load_start: u64,
    ) -> Result<FaultProxy, String> {
        Ok(FaultProxy {
            url: upstream.to_string(),
        })
    }
    /// Stub.
    pub fn stop(&mut self) {}
}
