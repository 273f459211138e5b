//! Sign-in rate limits: per client address and per account, checked before any password is looked at.
//! Each is a GCRA bucket (the `governor` crate): a full bucket allows a burst of the configured size,
//! then one more attempt each period / size.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::config::LoginLimits;

/// Past this many remembered keys, keys whose bucket is full again are forgotten.
const FORGET_ABOVE: usize = 10_000;

/// The sign-in limiters of this process.
pub struct LoginThrottle {
    per_ip: DefaultKeyedRateLimiter<IpAddr>,
    per_account: DefaultKeyedRateLimiter<String>,
    clock: DefaultClock,
    checks: AtomicU64,
}

impl LoginThrottle {
    /// Limiters for `limits`.
    pub fn new(limits: LoginLimits) -> Self {
        Self {
            per_ip: RateLimiter::keyed(quota(limits.per_ip_per_minute, Duration::from_secs(60))),
            per_account: RateLimiter::keyed(quota(
                limits.per_account_per_15_minutes,
                Duration::from_secs(15 * 60),
            )),
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
        }
    }

    /// Counts one sign-in attempt from `ip` on `account` (the email as typed). `Err` holds how long to wait
    /// before the next attempt is allowed. An address over its limit does not use up the account's.
    pub fn attempt(&self, ip: IpAddr, account: &str) -> Result<(), Duration> {
        if self
            .checks
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(256)
        {
            self.forget_idle();
        }
        let now = self.clock.now();
        self.per_ip
            .check_key(&ip)
            .map_err(|wait| wait.wait_time_from(now))?;
        self.per_account
            .check_key(&account.trim().to_lowercase())
            .map_err(|wait| wait.wait_time_from(now))
    }

    fn forget_idle(&self) {
        if self.per_ip.len() > FORGET_ABOVE {
            self.per_ip.retain_recent();
            self.per_ip.shrink_to_fit();
        }
        if self.per_account.len() > FORGET_ABOVE {
            self.per_account.retain_recent();
            self.per_account.shrink_to_fit();
        }
    }
}

/// `n` attempts per `period`, all of them usable at once.
fn quota(n: u32, period: Duration) -> Quota {
    let n = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(period / n.get())
        .unwrap_or_else(|| Quota::per_second(n))
        .allow_burst(n)
}

/// Whole seconds for a `Retry-After` header: rounded up, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_apply_per_address_and_per_account() {
        let throttle = LoginThrottle::new(LoginLimits {
            per_ip_per_minute: 3,
            per_account_per_15_minutes: 2,
        });
        let (a, b): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        assert!(throttle.attempt(a, "x@t.test").is_ok());
        assert!(throttle.attempt(a, "X@t.test ").is_ok(), "the same account");
        let wait = throttle.attempt(b, "x@t.test").unwrap_err();
        assert!(wait > Duration::from_secs(60) && wait <= Duration::from_secs(450));
        assert!(throttle.attempt(a, "y@t.test").is_ok());
        let wait = throttle.attempt(a, "z@t.test").unwrap_err();
        assert!(wait <= Duration::from_secs(20), "{wait:?}");
        assert!(throttle.attempt(b, "z@t.test").is_ok(), "z was not charged");
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
    }
}
