//! The site's build output under `/pkg` (the WebAssembly bundles, their
//! JavaScript, the CSS) served from memory: read and compressed once per
//! build, brotli at its best (a fan's first load is mostly these bytes),
//! with an ETag so a returning browser gets a 304. Until a file's bytes are
//! ready (seconds after a start, or a new build), it is sent as it is on
//! disk, compressed on the way like any answer.

use std::path::PathBuf;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::api::error::AppError;
use crate::prepared::Prepared;
use crate::state::AppState;

fn content_type(file: &str) -> Option<&'static str> {
    match file.rsplit_once('.')?.1 {
        "wasm" => Some("application/wasm"),
        "js" => Some("text/javascript"),
        "css" => Some("text/css"),
        _ => None,
    }
}

/// A file of the site's `pkg` folder: where it is, what it is, and which
/// build made it.
struct PkgFile {
    path: PathBuf,
    content_type: &'static str,
    revision: String,
}

async fn pkg_file_named(state: &AppState, file: &str) -> Option<PkgFile> {
    let content_type = content_type(file)?;
    // Plain names only: nothing outside the folder.
    if file.starts_with('.') || !file.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) {
        return None;
    }
    let path: PathBuf = state.settings.site_root.join("pkg").join(file);
    let meta = tokio::fs::metadata(&path).await.ok()?;
    let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    Some(PkgFile { revision: format!("{:x}-{modified:x}", meta.len()), path, content_type })
}

fn render(file: &PkgFile) -> impl FnOnce() -> std::io::Result<Prepared> + Send + 'static {
    let (path, revision, content_type) = (file.path.clone(), file.revision.clone(), file.content_type);
    move || Prepared::smallest(revision, content_type, std::fs::read(&path)?)
}

pub async fn pkg_file(State(state): State<AppState>, Path(file): Path<String>, headers: HeaderMap) -> Response {
    let Some(found) = pkg_file_named(&state, &file).await else { return AppError::not_found().into_response() };
    if let Some(prepared) = state.prepared.ready_or_start(&format!("pkg/{file}"), &found.revision, render(&found)) {
        return prepared.respond(&headers);
    }
    match tokio::fs::read(&found.path).await {
        Ok(body) => ([(axum::http::header::CONTENT_TYPE, found.content_type)], body).into_response(),
        Err(_) => AppError::not_found().into_response(),
    }
}

/// Compresses every file of the `pkg` folder now, so the first fans get
/// the smallest bytes.
pub async fn warm(state: AppState) {
    let Ok(mut entries) = tokio::fs::read_dir(state.settings.site_root.join("pkg")).await else { return };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if let Some(found) = pkg_file_named(&state, &name).await {
            if let Err(e) = state.prepared.get(&format!("pkg/{name}"), &found.revision, render(&found)).await {
                tracing::warn!(file = name, error = %e, "could not prepare a site file");
            }
        }
    }
}
