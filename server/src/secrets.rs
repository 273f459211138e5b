//! Agent secrets at rest: sealed with XChaCha20-Poly1305 under a key kept in the data directory
//! (`secret.key`, created on first start with mode 0600). The store only ever sees sealed values.

use std::path::Path;

use anyhow::Context as _;
use chacha20poly1305::aead::{Aead as _, KeyInit as _};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use rand::RngCore as _;

/// Marks a sealed value and its format version.
const SEALED_PREFIX: &str = "sealed:v1:";

/// Seals and opens secret values.
pub struct SecretBox {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox([key redacted])")
    }
}

impl SecretBox {
    /// Loads `<data_dir>/secret.key`, creating it (0600) if missing.
    pub fn load_or_create(data_dir: &Path) -> anyhow::Result<Self> {
        let path = data_dir.join("secret.key");
        let key_hex = match std::fs::read_to_string(&path) {
            Ok(text) => {
                make_private(&path)?;
                text.trim().to_owned()
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut key = [0_u8; 32];
                rand::rng().fill_bytes(&mut key);
                let text = crate::auth::hex(&key);
                write_private(&path, &text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                text
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let key: [u8; 32] = unhex(&key_hex)
            .and_then(|k| k.try_into().ok())
            .with_context(|| format!("{} is not a 64-character hex key", path.display()))?;
        Ok(Self {
            cipher: XChaCha20Poly1305::new(&Key::from(key)),
        })
    }

    /// Seals a plaintext: `sealed:v1:<nonce hex><ciphertext hex>`.
    pub fn seal(&self, plaintext: &str) -> anyhow::Result<String> {
        let mut nonce = [0_u8; 24];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = self
            .cipher
            .encrypt(&XNonce::from(nonce), plaintext.as_bytes())
            .map_err(|_| anyhow::anyhow!("cannot seal a secret"))?;
        Ok(format!(
            "{SEALED_PREFIX}{}{}",
            crate::auth::hex(&nonce),
            crate::auth::hex(&sealed)
        ))
    }

    /// Opens a value sealed by [`SecretBox::seal`] under the same key.
    pub fn open(&self, sealed: &str) -> anyhow::Result<String> {
        let body = sealed
            .strip_prefix(SEALED_PREFIX)
            .context("not a sealed value")?;
        let bytes = unhex(body)
            .filter(|b| b.len() > 24)
            .context("corrupt sealed value")?;
        let (nonce, ciphertext) = bytes.split_at(24);
        let nonce: [u8; 24] = nonce.try_into().context("corrupt sealed value")?;
        let plain = self
            .cipher
            .decrypt(&XNonce::from(nonce), ciphertext)
            .map_err(|_| anyhow::anyhow!("cannot open a sealed value: wrong secret.key?"))?;
        String::from_utf8(plain).context("sealed value is not UTF-8")
    }
}

/// Tightens an existing key file that others may read to 0600, with a log line.
fn make_private(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot make {} private (0600)", path.display()))?;
        tracing::warn!(file = %path.display(), was = format!("{mode:o}"), "key file was open to other users; now 0600");
    }
    Ok(())
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text.as_bytes())
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_open_and_keys_persist() {
        let dir = tempfile::tempdir().unwrap();
        let one = SecretBox::load_or_create(dir.path()).unwrap();
        let sealed = one.seal("sk-live-123").unwrap();
        assert!(sealed.starts_with(SEALED_PREFIX) && !sealed.contains("sk-live"));
        assert_ne!(
            sealed,
            one.seal("sk-live-123").unwrap(),
            "fresh nonce each time"
        );
        let again = SecretBox::load_or_create(dir.path()).unwrap();
        assert_eq!(again.open(&sealed).unwrap(), "sk-live-123");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join("secret.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let other = SecretBox::load_or_create(tempfile::tempdir().unwrap().path()).unwrap();
        assert!(other.open(&sealed).is_err(), "another key cannot open it");
        assert!(one.open("plain").is_err());
    }
}
