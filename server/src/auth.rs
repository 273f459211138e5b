//! Credentials: password hashing (argon2), random secrets for sessions and tokens (only their SHA-256 is
//! stored), and the CSRF token derived from a session secret.
//!
//! Invariant: the server hashes and verifies passwords only through [`hash`] and [`verify`], which run
//! at most one argon2 call per core at once, on threads of their own. Each call holds 19 MiB; on the
//! unbounded blocking pool a burst of 300 sign-ins took the server from 238 MB to 5.8 GB, never given
//! back.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use rand::RngCore as _;
use sha2::{Digest as _, Sha256};

/// At most this many password hashes or verifications run at once: one per core. Requests past it wait
/// their turn as cheap futures.
pub static HASHING: std::sync::LazyLock<tokio::sync::Semaphore> =
    std::sync::LazyLock::new(|| tokio::sync::Semaphore::new(hashing_threads()));

/// The threads that run argon2, one per core, started on first use. Always the same few threads (not
/// the blocking pool's ever-changing ones), so the allocator keeps at most one argon2 buffer per thread
/// instead of one per arena it ever touched.
static HASHERS: std::sync::LazyLock<std::sync::mpsc::Sender<Job>> =
    std::sync::LazyLock::new(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        for n in 0..hashing_threads() {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("muster-hash-{n}"))
                .spawn(move || {
                    loop {
                        let next = rx
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .recv();
                        let Ok(job) = next else { return };
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    }
                })
                .expect("start a password hashing thread");
        }
        tx
    });

type Job = Box<dyn FnOnce() + Send>;

fn hashing_threads() -> usize {
    std::thread::available_parallelism().map_or(2, usize::from)
}

/// Runs `work` on a hashing thread, within the [`HASHING`] bound.
async fn on_hasher<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    let _permit = HASHING.acquire().await?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    HASHERS
        .send(Box::new(move || {
            let _ = tx.send(work());
        }))
        .map_err(|_| anyhow::anyhow!("the password hashing threads are gone"))?;
    rx.await
        .map_err(|_| anyhow::anyhow!("password hashing failed"))
}

/// A hash of a password nobody knows, with the same parameters as real ones: an unknown email is
/// verified against it, so it costs the same time as a known one (no account discovery by timing).
static DUMMY_HASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    hash_password("muster: no account has this password").unwrap_or_default()
});

/// Hashes `password` on a hashing thread, within the [`HASHING`] bound.
pub async fn hash(password: String) -> anyhow::Result<String> {
    on_hasher(move || hash_password(&password)).await?
}

/// Whether `password` matches `phc`, checked on a hashing thread within the [`HASHING`] bound. With no
/// hash (unknown account) the same work is done against a dummy hash, and the answer is `false`.
pub async fn verify(password: String, phc: Option<String>) -> bool {
    on_hasher(move || match phc {
        Some(phc) => verify_password(&password, &phc),
        None => {
            let _ = verify_password(&password, &DUMMY_HASH);
            false
        }
    })
    .await
    .unwrap_or(false)
}

/// Computes the dummy hash now (at startup) rather than during the first sign-in with an unknown email.
pub async fn warm_up() {
    let _ = on_hasher(|| DUMMY_HASH.len()).await;
}

/// Shortest accepted password: the one constant the pages' hints are written from too.
pub const MIN_PASSWORD_CHARS: usize = muster_web::MIN_PASSWORD_CHARS;

/// Checks a new password against the policy.
pub fn check_password(password: &str) -> Result<(), crate::domain::ValidationError> {
    let n = password.chars().count();
    if n < MIN_PASSWORD_CHARS {
        return Err(crate::domain::ValidationError::new(
            "password",
            format!("must be at least {MIN_PASSWORD_CHARS} characters"),
        ));
    }
    if n > 1024 {
        return Err(crate::domain::ValidationError::new(
            "password",
            "must be at most 1024 characters",
        ));
    }
    Ok(())
}

/// Hashes a password as an argon2id PHC string. Slow on purpose: the server calls it through [`hash`].
pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let mut salt = [0_u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).map_err(|e| anyhow::anyhow!("salt: {e}"))?;
    let hash = Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map_err(|e| anyhow::anyhow!("cannot hash the password: {e}"))?;
    Ok(hash.to_string())
}

/// Whether `password` matches the stored PHC string. A malformed hash never matches.
pub fn verify_password(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A freshly generated secret: what the holder gets once, and what is stored.
pub struct NewSecret {
    /// Shown once (`mst_…` for API tokens, the cookie value for sessions).
    pub secret: String,
    /// SHA-256 of the secret, hex: the only thing stored.
    pub hash: String,
    /// The first characters, stored to tell tokens apart in lists.
    pub prefix: String,
}

/// Prefix of every API token (a person's, a run's), so a leaked one is recognisable.
pub const API_TOKEN_KIND: &str = "mst";

/// Prefix of every runner token, so a leaked one is recognisable (and told apart from an API token).
pub const RUNNER_TOKEN_KIND: &str = "mrt";

/// Generates `<kind>_<64 hex chars>` from 32 random bytes.
pub fn new_secret(kind: &str) -> NewSecret {
    let mut bytes = [0_u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let secret = format!("{kind}_{}", hex(&bytes));
    let prefix = secret.chars().take(kind.len() + 9).collect();
    NewSecret {
        hash: hash_secret(&secret),
        secret,
        prefix,
    }
}

/// The stored form of a secret.
pub fn hash_secret(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// The CSRF token for a session: derived from its secret, so it needs no storage and cannot be guessed
/// without the cookie.
pub fn csrf_token(session_secret: &str) -> String {
    hex(&Sha256::digest(
        format!("muster-csrf:{session_secret}").as_bytes(),
    ))[..32]
        .to_owned()
}

/// Compares two strings in time independent of where they differ.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0_u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_only_themselves() {
        let phc = hash_password("correct horse").unwrap();
        assert!(phc.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &phc));
        assert!(!verify_password("wrong horse", &phc));
        assert!(!verify_password("correct horse", "not a hash"));
        assert_eq!(check_password("short").unwrap_err().field, "password");
    }

    #[tokio::test]
    async fn unknown_accounts_cost_a_real_verification() {
        let dummy = PasswordHash::new(&DUMMY_HASH).unwrap();
        let real_phc = hash_password("x").unwrap();
        let real = PasswordHash::new(&real_phc).unwrap();
        assert_eq!(dummy.algorithm, real.algorithm);
        assert_eq!(dummy.params, real.params, "same cost as a real hash");
        assert!(!verify("muster: no account has this password".into(), None).await);
        assert!(verify("x".into(), Some(real_phc)).await);
    }

    #[test]
    fn secrets_are_random_and_stored_hashed() {
        let a = new_secret("mst");
        let b = new_secret("mst");
        assert_ne!(a.secret, b.secret);
        assert!(a.secret.starts_with("mst_") && a.secret.len() == 4 + 64);
        assert_eq!(a.hash, hash_secret(&a.secret));
        assert!(a.secret.starts_with(&a.prefix) && a.prefix.len() == 12);
        assert_ne!(csrf_token(&a.secret), csrf_token(&b.secret));
        assert!(
            constant_time_eq("abc", "abc")
                && !constant_time_eq("abc", "abd")
                && !constant_time_eq("a", "ab")
        );
    }
}
