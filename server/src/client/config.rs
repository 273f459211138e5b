//! The client's config file: `{"server": …, "token": …}` as JSON in `$XDG_CONFIG_HOME/muster/config.json`
//! (or `--config-dir`). It holds a credential, so it is written with mode 0600 in a folder created 0700,
//! through a temporary file and a rename so a crash never leaves half a file.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use super::Secret;

/// What `muster login` stores.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stored {
    /// The server URL, e.g. `http://127.0.0.1:7777`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The API token; removed by `muster logout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
}

/// The config file inside `dir`, or inside the user's config folder when `dir` is `None`.
pub fn path(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => dirs::config_dir().map(|d| d.join("muster")).context(
            "cannot find a config folder for this user; pass --config-dir or set MUSTER_CONFIG_DIR",
        )?,
    };
    Ok(dir.join("config.json"))
}

/// The stored settings, or `None` when the file does not exist.
pub fn load(path: &Path) -> anyhow::Result<Option<Stored>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    serde_json::from_str(&text).map(Some).with_context(|| {
        format!(
            "{} is not a muster config file; fix or delete it and run `muster login` again",
            path.display()
        )
    })
}

/// Writes the settings, readable by the owner only.
pub fn save(path: &Path, stored: &Stored) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent folder", path.display()))?;
    create_private_dir(dir)?;
    let json = serde_json::to_vec_pretty(stored).context("cannot encode the config")?;
    let tmp = path.with_extension("json.tmp");
    let mut file = private_file(&tmp)?;
    file.write_all(&json)
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    drop(file);
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create config folder {}", dir.display()))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create config folder {}", dir.display()))
}

#[cfg(unix)]
fn private_file(path: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    // `mode` applies only when the file is new; a leftover temporary file keeps its old mode otherwise.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private", path.display()))?;
    Ok(file)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_privately_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = path(Some(&dir.path().join("nested"))).unwrap();
        assert!(load(&file).unwrap().is_none());
        let stored = Stored {
            server: Some("http://127.0.0.1:1".into()),
            token: Some("mst_x".parse().unwrap()),
        };
        save(&file, &stored).unwrap();
        let back = load(&file).unwrap().unwrap();
        assert_eq!(back.token.unwrap().expose(), "mst_x");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&file, "not json").unwrap();
        assert!(
            load(&file)
                .unwrap_err()
                .to_string()
                .contains("not a muster config file")
        );
    }
}
