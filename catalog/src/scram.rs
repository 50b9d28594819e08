//! SCRAM-SHA-256 verifiers (RFC 5802, RFC 7677), the form in which a role's password is kept:
//! the salt, the iteration count and two keys derived from the salted password, from which a
//! server can check a client's proof of the password without ever holding the password. Kept
//! and shown as PostgreSQL writes them, `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`
//! (base64), so a verifier taken from PostgreSQL's `pg_authid` works here too.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::error::{CatalogError, Result};

/// PBKDF2 iterations of a new verifier: PostgreSQL's default (`scram_iterations`).
pub const SCRAM_ITERATIONS: u32 = 4096;
/// Bytes of a new verifier's random salt (PostgreSQL's length).
const SALT_LEN: usize = 16;
/// The text every verifier starts with.
const PREFIX: &str = "SCRAM-SHA-256$";

type HmacSha256 = hmac::Hmac<Sha256>;

/// What is kept of a password.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramVerifier {
    iterations: u32,
    salt: Vec<u8>,
    stored_key: [u8; 32],
    server_key: [u8; 32],
}

impl ScramVerifier {
    /// The verifier of `password` with a fresh random salt.
    pub fn new(password: &str) -> Result<ScramVerifier> {
        let mut salt = vec![0; SALT_LEN];
        getrandom::fill(&mut salt).map_err(|e| CatalogError::Random {
            reason: e.to_string(),
        })?;
        Ok(ScramVerifier::derive(password, &salt, SCRAM_ITERATIONS))
    }

    /// The verifier of `password` with `salt` and `iterations`. The password is normalized
    /// with SASLprep first, as clients do; one SASLprep refuses is used as it is (as
    /// PostgreSQL does).
    pub fn derive(password: &str, salt: &[u8], iterations: u32) -> ScramVerifier {
        let prepared = stringprep::saslprep(password);
        let password = prepared.as_deref().unwrap_or(password);
        let salted = salted_password(password.as_bytes(), salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        ScramVerifier {
            iterations,
            salt: salt.to_vec(),
            stored_key: Sha256::digest(client_key).into(),
            server_key: hmac(&salted, b"Server Key"),
        }
    }

    /// Reads a verifier in PostgreSQL's text form; None if `text` is not one.
    pub fn parse(text: &str) -> Option<ScramVerifier> {
        let rest = text.strip_prefix(PREFIX)?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored_key, server_key) = keys.split_once(':')?;
        let iterations = iterations.parse().ok().filter(|i| *i > 0)?;
        let salt = BASE64.decode(salt).ok()?;
        Some(ScramVerifier {
            iterations,
            salt,
            stored_key: BASE64.decode(stored_key).ok()?.try_into().ok()?,
            server_key: BASE64.decode(server_key).ok()?.try_into().ok()?,
        })
    }

    pub fn iterations(&self) -> u32 {
        self.iterations
    }

    pub fn salt(&self) -> &[u8] {
        &self.salt
    }

    /// Checks a client's proof of the password over `auth_message` (the SCRAM exchange so
    /// far); when it holds, the server's signature that proves to the client that this
    /// server knows the verifier.
    pub fn verify(&self, auth_message: &[u8], client_proof: &[u8]) -> Option<[u8; 32]> {
        let signature = hmac(&self.stored_key, auth_message);
        if client_proof.len() != signature.len() {
            return None;
        }
        let client_key: Vec<u8> = client_proof
            .iter()
            .zip(signature)
            .map(|(proof, sig)| proof ^ sig)
            .collect();
        let stored_key: [u8; 32] = Sha256::digest(&client_key).into();
        // Compared in full whatever the first difference, so timing tells nothing.
        let differences = stored_key
            .iter()
            .zip(self.stored_key)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        (differences == 0).then(|| hmac(&self.server_key, auth_message))
    }
}

impl fmt::Display for ScramVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX}{}:{}${}:{}",
            self.iterations,
            BASE64.encode(&self.salt),
            BASE64.encode(self.stored_key),
            BASE64.encode(self.server_key)
        )
    }
}

impl fmt::Debug for ScramVerifier {
    /// The salt and iterations only: the keys are as good as the password against this
    /// server, and have no business in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramVerifier")
            .field("iterations", &self.iterations)
            .field("salt", &BASE64.encode(&self.salt))
            .finish_non_exhaustive()
    }
}

/// HMAC-SHA-256 of `message` under `key`.
pub fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    // HMAC takes a key of any length, so this cannot fail.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// PBKDF2-HMAC-SHA-256 of `password` with one 32-byte block (RFC 5802's Hi()).
fn salted_password(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut first = salt.to_vec();
    first.extend_from_slice(&1u32.to_be_bytes());
    let mut round = hmac(password, &first);
    let mut result = round;
    for _ in 1..iterations {
        round = hmac(password, &round);
        for (r, u) in result.iter_mut().zip(round) {
            *r ^= u;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example exchange: user "user", password "pencil".
    #[test]
    fn the_rfc_7677_exchange_verifies() {
        let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("salt");
        let verifier = ScramVerifier::derive("pencil", &salt, 4096);
        let auth_message = "n=user,r=rOprNGfwEbeRWgbNEkqO,\
            r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,\
            c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let proof = BASE64
            .decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .expect("proof");
        let signature = verifier
            .verify(auth_message.as_bytes(), &proof)
            .expect("the RFC's proof holds");
        assert_eq!(
            BASE64.encode(signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        let mut wrong = proof.clone();
        wrong[0] ^= 1;
        assert!(verifier.verify(auth_message.as_bytes(), &wrong).is_none());
        assert!(
            verifier
                .verify(auth_message.as_bytes(), &proof[..31])
                .is_none()
        );
    }

    #[test]
    fn a_verifier_reads_back_from_its_text_and_hides_its_keys() {
        let verifier = ScramVerifier::new("secret").expect("verifier");
        let text = verifier.to_string();
        assert!(text.starts_with("SCRAM-SHA-256$4096:"), "{text}");
        assert_eq!(ScramVerifier::parse(&text), Some(verifier.clone()));
        assert!(!format!("{verifier:?}").contains(&text[text.len() - 20..]));
        for bad in [
            "",
            "SCRAM-SHA-256$",
            "SCRAM-SHA-256$0:AAAA$AAAA:AAAA",
            "md5abc",
        ] {
            assert_eq!(ScramVerifier::parse(bad), None, "{bad}");
        }
        // Two verifiers of one password differ in their salt.
        let again = ScramVerifier::new("secret").expect("verifier");
        assert_ne!(again.salt(), verifier.salt());
    }
}
