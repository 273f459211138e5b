//! What a Muster process needs from its machine, for `serve` and `muster runner` alike: a private data
//! directory, and the signals that stop it.

use std::path::Path;

/// Creates the data directory if needed (mode 0700: it holds the key and, on SQLite, the database),
/// tightens an existing one that others may read, and checks that it is writable.
pub fn prepare_data_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    let fix = "choose a writable one with --data-dir or MUSTER_DATA_DIR";
    let cannot_create = |e: std::io::Error| {
        anyhow::anyhow!("cannot create data directory {}: {e}; {fix}", dir.display())
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(cannot_create)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        other => other.map_err(cannot_create)?,
    }
    let mode = std::fs::metadata(dir)
        .map_err(cannot_create)?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| {
            anyhow::anyhow!(
                "cannot make data directory {} private (0700): {e}",
                dir.display()
            )
        })?;
        tracing::warn!(dir = %dir.display(), was = format!("{mode:o}"), "data directory was open to other users; now 0700");
    }
    let probe = dir.join(".muster-write-check");
    std::fs::write(&probe, b"ok").map_err(|e| {
        anyhow::anyhow!(
            "data directory {} is not writable: {e}; {fix}",
            dir.display()
        )
    })?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Waits for SIGINT or SIGTERM and names the one that came.
pub(crate) async fn shutdown_signal() -> &'static str {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => "SIGINT",
        () = terminate => "SIGTERM",
    }
}
