//! Unguessable tokens and their fingerprints.

use rand::RngCore;
use sha2::{Digest, Sha256};

/// A fresh fencing token for a hold: 128 random bits, hex encoded.
pub(crate) fn hold_token() -> String {
    random_hex(16)
}

/// A short, one-way tag of a token for the audit log, so the log shows which
/// token acted without ever storing a usable token.
pub(crate) fn token_tag(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    hex::encode(&digest[..6])
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Names a client device that signed in (see `sign_in`).
pub(crate) fn device_nonce() -> String {
    random_hex(16)
}

/// `len` random bytes, hex encoded. From the thread's CSPRNG (ChaCha,
/// seeded and reseeded from the OS): a token per hold or queue entry, read
/// from the OS each time, was a system call per request.
pub(crate) fn random_hex(len: usize) -> String {
    let mut buf = vec![0u8; len];
    rand::thread_rng().fill_bytes(&mut buf);
    hex::encode(buf)
}
