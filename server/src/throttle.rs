//! Sign-in rate limits, checked before any password is looked at:
//! - per client address, every attempt (a GCRA bucket from the `governor` crate: a full bucket allows a
//!   burst of the configured size, then one more attempt each period / size), so one address cannot make
//!   the server hash passwords without end;
//! - per account **and** address, failures only: an attacker who fails someone's password from one
//!   address is throttled there, while the right password from another address still signs in;
//! - per account from every address, failures only, with a ceiling [`ACCOUNT_CEILING_FACTOR`] times
//!   higher over an hour ([`ACCOUNT_CEILING_PERIOD`]), so a guess spread over many addresses stays bounded.
//!
//! Failures are counted when an attempt starts (so a burst of concurrent guesses cannot all pass before
//! the first is counted) and handed back by [`LoginThrottle::succeeded`] when the password was right.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::config::LoginLimits;

/// Past this many remembered keys, keys whose bucket is full again are forgotten.
const FORGET_ABOVE: usize = 10_000;

/// The window of failures per account and address.
const PAIR_PERIOD: Duration = Duration::from_secs(15 * 60);

/// How many times the per-address failure limit one account may fail from all addresses together in
/// [`ACCOUNT_CEILING_PERIOD`]: with the default 5, 50 guesses an hour however many addresses guess.
pub const ACCOUNT_CEILING_FACTOR: u32 = 10;

/// The window of the per-account ceiling.
pub const ACCOUNT_CEILING_PERIOD: Duration = Duration::from_secs(60 * 60);

/// The sign-in limiters of this process.
pub struct LoginThrottle {
    per_ip: DefaultKeyedRateLimiter<IpAddr>,
    failures: Mutex<Failures>,
    pair_limit: usize,
    account_limit: usize,
    clock: DefaultClock,
    checks: AtomicU64,
}

/// Recent failures (as the instants they started), per account and address and per account.
#[derive(Default)]
struct Failures {
    per_pair: HashMap<(String, IpAddr), VecDeque<Instant>>,
    per_account: HashMap<String, VecDeque<Instant>>,
}

/// A sign-in attempt the limits let through: counted as a failure unless handed to
/// [`LoginThrottle::succeeded`].
#[derive(Debug)]
pub struct Attempt {
    account: String,
    ip: IpAddr,
    at: Instant,
}

impl LoginThrottle {
    /// Limiters for `limits`.
    pub fn new(limits: LoginLimits) -> Self {
        let pair_limit = limits.per_account_per_15_minutes.max(1);
        Self {
            per_ip: RateLimiter::keyed(quota(limits.per_ip_per_minute, Duration::from_secs(60))),
            failures: Mutex::default(),
            pair_limit: pair_limit as usize,
            account_limit: pair_limit.saturating_mul(ACCOUNT_CEILING_FACTOR) as usize,
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
        }
    }

    /// Counts one sign-in attempt from `ip` on `account` (the email as typed). `Err` holds how long to wait
    /// before the next attempt is allowed. An address over its limit does not use up the account's.
    pub fn attempt(&self, ip: IpAddr, account: &str) -> Result<Attempt, Duration> {
        self.attempt_at(ip, account, Instant::now())
    }

    fn attempt_at(&self, ip: IpAddr, account: &str, now: Instant) -> Result<Attempt, Duration> {
        let forget = self
            .checks
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(256);
        let clock_now = self.clock.now();
        self.per_ip
            .check_key(&ip)
            .map_err(|wait| wait.wait_time_from(clock_now))?;
        let account = account.trim().to_lowercase();
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if forget {
            if self.per_ip.len() > FORGET_ABOVE {
                self.per_ip.retain_recent();
                self.per_ip.shrink_to_fit();
            }
            failures.forget_idle(now);
        }
        let pair = (account.clone(), ip);
        let pair_wait = wait(
            failures.per_pair.get_mut(&pair),
            self.pair_limit,
            PAIR_PERIOD,
            now,
        );
        let account_wait = wait(
            failures.per_account.get_mut(&account),
            self.account_limit,
            ACCOUNT_CEILING_PERIOD,
            now,
        );
        if let Some(longest) = pair_wait.into_iter().chain(account_wait).max() {
            return Err(longest);
        }
        failures.per_pair.entry(pair).or_default().push_back(now);
        failures
            .per_account
            .entry(account.clone())
            .or_default()
            .push_back(now);
        Ok(Attempt {
            account,
            ip,
            at: now,
        })
    }

    /// The password of `attempt` was right: it is not a failure.
    pub fn succeeded(&self, attempt: Attempt) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let Attempt { account, ip, at } = attempt;
        refund(failures.per_account.get_mut(&account), at);
        refund(failures.per_pair.get_mut(&(account, ip)), at);
    }
}

impl Failures {
    fn forget_idle(&mut self, now: Instant) {
        if self.per_pair.len() > FORGET_ABOVE {
            self.per_pair.retain(|_, times| {
                prune(times, PAIR_PERIOD, now);
                !times.is_empty()
            });
            self.per_pair.shrink_to_fit();
        }
        if self.per_account.len() > FORGET_ABOVE {
            self.per_account.retain(|_, times| {
                prune(times, ACCOUNT_CEILING_PERIOD, now);
                !times.is_empty()
            });
            self.per_account.shrink_to_fit();
        }
    }
}

/// Drops the failures older than `period`.
fn prune(times: &mut VecDeque<Instant>, period: Duration, now: Instant) {
    while times
        .front()
        .is_some_and(|t| now.saturating_duration_since(*t) >= period)
    {
        times.pop_front();
    }
}

/// How long until one more failure fits under `limit` in `period`, if none fits now.
fn wait(
    times: Option<&mut VecDeque<Instant>>,
    limit: usize,
    period: Duration,
    now: Instant,
) -> Option<Duration> {
    let times = times?;
    prune(times, period, now);
    if times.len() < limit {
        return None;
    }
    let oldest = times.front()?;
    Some(period.saturating_sub(now.saturating_duration_since(*oldest)))
}

/// Removes one failure recorded at `at`.
fn refund(times: Option<&mut VecDeque<Instant>>, at: Instant) {
    if let Some(times) = times
        && let Some(i) = times.iter().rposition(|t| *t == at)
    {
        times.remove(i);
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

    fn throttle(per_ip: u32, per_pair: u32) -> LoginThrottle {
        LoginThrottle::new(LoginLimits {
            per_ip_per_minute: per_ip,
            per_account_per_15_minutes: per_pair,
        })
    }

    #[test]
    fn addresses_are_limited_per_attempt() {
        let throttle = throttle(3, 100);
        let (a, b): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        for n in 0..3 {
            assert!(throttle.attempt(a, &format!("u{n}@t.test")).is_ok());
        }
        let wait = throttle.attempt(a, "z@t.test").unwrap_err();
        assert!(wait <= Duration::from_secs(20), "{wait:?}");
        assert!(throttle.attempt(b, "z@t.test").is_ok(), "z was not charged");
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
    }

    #[test]
    fn failures_count_per_account_and_address_and_successes_do_not() {
        let throttle = throttle(1000, 2);
        let (a, b): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let now = Instant::now();
        // Right passwords from `a` are no failures.
        for _ in 0..5 {
            let ok = throttle.attempt_at(a, "x@t.test", now).unwrap();
            throttle.succeeded(ok);
        }
        assert!(throttle.attempt_at(a, "x@t.test", now).is_ok());
        assert!(
            throttle.attempt_at(a, "X@t.test ", now).is_ok(),
            "the same account"
        );
        let wait = throttle.attempt_at(a, "x@t.test", now).unwrap_err();
        assert_eq!(wait, PAIR_PERIOD);
        // Another address, the same account: not throttled.
        let ok = throttle.attempt_at(b, "x@t.test", now).unwrap();
        throttle.succeeded(ok);
        // Another account from `a`: not throttled.
        assert!(throttle.attempt_at(a, "y@t.test", now).is_ok());
        // The window moves on.
        let later = now + PAIR_PERIOD;
        assert!(throttle.attempt_at(a, "x@t.test", later).is_ok());
    }

    #[test]
    fn an_account_has_a_ceiling_over_all_addresses() {
        let throttle = throttle(1000, 2);
        let now = Instant::now();
        let ceiling = 2 * ACCOUNT_CEILING_FACTOR;
        for n in 0..ceiling {
            let ip = IpAddr::from([10, 0, (n / 2) as u8, 1]);
            assert!(throttle.attempt_at(ip, "x@t.test", now).is_ok(), "{n}");
        }
        let fresh = IpAddr::from([10, 9, 9, 9]);
        assert_eq!(
            throttle.attempt_at(fresh, "x@t.test", now).unwrap_err(),
            ACCOUNT_CEILING_PERIOD
        );
        assert!(throttle.attempt_at(fresh, "y@t.test", now).is_ok());
        assert!(
            throttle
                .attempt_at(fresh, "x@t.test", now + ACCOUNT_CEILING_PERIOD)
                .is_ok()
        );
    }
}
