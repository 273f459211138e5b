//! Credentials: password hashing (argon2), random secrets for sessions and tokens (only their SHA-256 is
//! stored), and the CSRF token derived from a session secret.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use rand::RngCore as _;
use sha2::{Digest as _, Sha256};

/// Shortest accepted password.
pub const MIN_PASSWORD_CHARS: usize = 8;

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

/// Hashes a password as an argon2id PHC string. Slow on purpose: call it from `spawn_blocking`.
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
