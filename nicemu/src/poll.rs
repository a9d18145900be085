// SPDX-License-Identifier: Apache-2.0
//! `--poll-us N`: after serving a message or a kick, the vfio-user server
//! threads and the vhost-user queue workers poll for the next one (spinning)
//! for up to N µs before they block, so a request that follows soon is taken
//! without a wake-up. Each polling thread keeps a core busy meanwhile: for
//! hosts with cores to spare (KVM). Default 0 (never poll).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Largest `--poll-us` (the vfio-user server's own bound,
/// [`nicemu_vfio_user_server::limits::MAX_POLL`]).
pub const MAX_POLL_US: u64 = nicemu_vfio_user_server::limits::MAX_POLL.as_micros() as u64;

static POLL_US: AtomicU64 = AtomicU64::new(0);

/// Parses `--poll-us`: microseconds, 0 to [`MAX_POLL_US`].
pub fn parse_poll_us(s: &str) -> Result<u64, String> {
    let n: u64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of microseconds"))?;
    if n > MAX_POLL_US {
        return Err(format!(
            "{n} µs is more than {MAX_POLL_US} µs (a polling thread keeps a core busy)"
        ));
    }
    Ok(n)
}

/// Sets the polling window of threads started from now on.
pub fn set(us: u64) {
    POLL_US.store(us.min(MAX_POLL_US), Ordering::Relaxed);
}

/// The polling window (zero: block at once).
pub fn window() -> Duration {
    Duration::from_micros(POLL_US.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_us_is_bounded_with_a_reason() {
        assert_eq!(parse_poll_us("0"), Ok(0));
        assert_eq!(parse_poll_us("50"), Ok(50));
        assert_eq!(parse_poll_us("1000"), Ok(1000));
        let e = parse_poll_us("1001").unwrap_err();
        assert!(e.contains("more than 1000 µs"), "{e}");
        assert!(parse_poll_us("-1").unwrap_err().contains("not a number"));
        parse_poll_us("5ms").unwrap_err();
    }
}
