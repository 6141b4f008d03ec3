//! Secrets the user keeps in files (a workload's JWT): read so that a FIFO
//! or a device cannot block or flood mcpscope, and checked for shape.

use std::io::Read;
use std::path::Path;

/// The most a token file may hold: far above any JWT a platform issues.
const MAX_TOKEN_FILE: u64 = 1 << 20;

/// Why a token file cannot be used (names no path: the caller says which file).
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error(transparent)]
    Open(#[from] crate::record::private_files::PrivateFileError),
    #[error("cannot read it")]
    Read(#[source] std::io::Error),
    #[error("it holds more than 1 MiB: not a token")]
    TooLarge,
    #[error("it does not hold a JWT (header.claims.signature)")]
    NotAJwt,
}

/// A workload's JWT from `path` (a Kubernetes service account token, a
/// cloud identity token): a regular file of at most 1 MiB holding one
/// compact JWS, surrounding whitespace ignored. The error names no path:
/// the caller says which file it was.
pub fn read_workload_token(path: &Path) -> Result<String, TokenFileError> {
    let f = crate::record::private_files::open_regular(path)?;
    let mut text = String::new();
    f.take(MAX_TOKEN_FILE + 1)
        .read_to_string(&mut text)
        .map_err(TokenFileError::Read)?;
    if text.len() as u64 > MAX_TOKEN_FILE {
        return Err(TokenFileError::TooLarge);
    }
    let token = text.trim();
    let parts: Vec<&str> = token.split('.').collect();
    let base64url = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if parts.len() != 3 || !base64url(parts[0]) || !base64url(parts[1]) {
        return Err(TokenFileError::NotAJwt);
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_is_read_trimmed_and_checked_for_shape() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, "  eyJh.eyJz.c2ln\n").unwrap();
        assert_eq!(read_workload_token(&p).unwrap(), "eyJh.eyJz.c2ln");
        std::fs::write(&p, "not a token").unwrap();
        assert!(matches!(read_workload_token(&p), Err(TokenFileError::NotAJwt)));
        std::fs::write(&p, "a b.c.d").unwrap();
        assert!(read_workload_token(&p).is_err());
        assert!(read_workload_token(&dir.path().join("missing")).is_err());
        assert!(
            read_workload_token(Path::new("/dev/zero")).is_err(),
            "a device is refused, not read"
        );
    }
}
