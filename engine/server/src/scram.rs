//! The server's side of a SCRAM-SHA-256 exchange (RFC 5802, RFC 7677, as PostgreSQL runs it):
//! reading the client's first and final messages, writing the server's, and checking the
//! client's proof against the role's verifier. No channel binding is offered, so a client
//! asking for it (`p=`) is refused; one that could bind but saw it was not offered (`y`) is
//! accepted. As in PostgreSQL, the user name inside the exchange is ignored: the startup
//! message's user is the one authenticated.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use rowdex_catalog::{ScramVerifier, hmac};

/// The only mechanism offered.
pub const MECHANISM: &str = "SCRAM-SHA-256";
/// Random bytes of the server's part of the nonce.
const NONCE_BYTES: usize = 18;

/// Why an exchange failed.
#[derive(Debug, PartialEq, Eq)]
pub enum ScramFailure {
    /// A message that is not what the protocol says at this point.
    Malformed(&'static str),
    /// The proof does not match the verifier (a wrong password, or no such role).
    WrongProof,
}

/// The exchange after the server's first message, waiting for the client's final one.
pub struct ServerFirst {
    /// The text sent, part of the signed AuthMessage.
    pub message: String,
    client_first_bare: String,
    gs2_header: String,
    nonce: String,
}

/// Reads the client's first message and answers it with `verifier`'s salt and iterations.
pub fn server_first(
    client_first: &[u8],
    verifier: &ScramVerifier,
) -> Result<ServerFirst, ScramFailure> {
    let text = std::str::from_utf8(client_first)
        .map_err(|_| ScramFailure::Malformed("the client's first message is not UTF-8"))?;
    let (binding, rest) = text
        .split_once(',')
        .ok_or(ScramFailure::Malformed("no GS2 header"))?;
    match binding {
        "n" | "y" => {}
        _ => {
            return Err(ScramFailure::Malformed(
                "channel binding is not supported (connect with channel_binding=prefer or disable)",
            ));
        }
    }
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or(ScramFailure::Malformed("no GS2 header"))?;
    if !authzid.is_empty() {
        return Err(ScramFailure::Malformed(
            "an authorization identity is not supported",
        ));
    }
    let client_nonce = attribute(bare, 'r').ok_or(ScramFailure::Malformed("no client nonce"))?;
    if client_nonce.is_empty() || client_nonce.contains(',') {
        return Err(ScramFailure::Malformed("a bad client nonce"));
    }
    let mut server_part = [0u8; NONCE_BYTES];
    getrandom::fill(&mut server_part)
        .map_err(|_| ScramFailure::Malformed("no random bytes for the server's nonce"))?;
    let nonce = format!("{client_nonce}{}", BASE64.encode(server_part));
    let message = format!(
        "r={nonce},s={},i={}",
        BASE64.encode(verifier.salt()),
        verifier.iterations()
    );
    Ok(ServerFirst {
        message,
        client_first_bare: bare.to_string(),
        gs2_header: format!("{binding},{authzid},"),
        nonce,
    })
}

impl ServerFirst {
    /// Reads the client's final message and checks its proof; the server's final message
    /// (its signature) when the proof holds.
    pub fn server_final(
        &self,
        client_final: &[u8],
        verifier: &ScramVerifier,
    ) -> Result<String, ScramFailure> {
        let text = std::str::from_utf8(client_final)
            .map_err(|_| ScramFailure::Malformed("the client's final message is not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or(ScramFailure::Malformed("no client proof"))?;
        let binding = attribute(without_proof, 'c')
            .and_then(|c| BASE64.decode(c).ok())
            .ok_or(ScramFailure::Malformed("no channel binding attribute"))?;
        if binding != self.gs2_header.as_bytes() {
            return Err(ScramFailure::Malformed(
                "the channel binding does not match the first message",
            ));
        }
        if attribute(without_proof, 'r') != Some(self.nonce.as_str()) {
            return Err(ScramFailure::Malformed("the nonce does not match"));
        }
        let proof = BASE64
            .decode(proof)
            .map_err(|_| ScramFailure::Malformed("the client proof is not base64"))?;
        let auth_message = format!(
            "{},{},{without_proof}",
            self.client_first_bare, self.message
        );
        let signature = verifier
            .verify(auth_message.as_bytes(), &proof)
            .ok_or(ScramFailure::WrongProof)?;
        Ok(format!("v={}", BASE64.encode(signature)))
    }
}

/// The value of attribute `name` (`name=value`) of a comma-separated SCRAM message.
fn attribute(message: &str, name: char) -> Option<&str> {
    message.split(',').find_map(|part| {
        let mut chars = part.chars();
        (chars.next() == Some(name) && chars.next() == Some('=')).then(|| &part[2..])
    })
}

/// A verifier for a user who cannot log in by password (no such role, no password): salted
/// from `secret` and the name, so the exchange looks the same every time for that name and
/// like a real one, and fails only at the proof. Its keys come from a random password nobody
/// knows.
pub fn mock_verifier(secret: &[u8; 32], user: &str) -> ScramVerifier {
    let salt = hmac(secret, user.as_bytes());
    let password = BASE64.encode(hmac(secret, b"mock password"));
    ScramVerifier::derive(&password, &salt[..16], rowdex_catalog::SCRAM_ITERATIONS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's side, as RFC 5802 describes it, to drive the server's.
    fn client_final(first: &ServerFirst, password: &str, channel: &str) -> String {
        let salt = BASE64
            .decode(attribute(&first.message, 's').expect("salt"))
            .expect("salt b64");
        let iterations: u32 = attribute(&first.message, 'i')
            .expect("iterations")
            .parse()
            .expect("number");
        let nonce = attribute(&first.message, 'r').expect("nonce");
        let without_proof = format!("c={},r={nonce}", BASE64.encode(channel));
        let auth_message = format!(
            "{},{},{without_proof}",
            first.client_first_bare, first.message
        );
        // ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage).
        let client_key = client_key(password, &salt, iterations);
        let stored_key: [u8; 32] = {
            use sha2::Digest;
            sha2::Sha256::digest(client_key).into()
        };
        let signature = hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(signature)
            .map(|(k, s)| k ^ s)
            .collect();
        format!("{without_proof},p={}", BASE64.encode(proof))
    }

    /// HMAC(Hi(password, salt, i), "Client Key"), written out here independently of the
    /// catalog's derivation, so a mistake there would not cancel out.
    fn client_key(password: &str, salt: &[u8], iterations: u32) -> [u8; 32] {
        let mut first = salt.to_vec();
        first.extend_from_slice(&1u32.to_be_bytes());
        let mut round = hmac(password.as_bytes(), &first);
        let mut salted = round;
        for _ in 1..iterations {
            round = hmac(password.as_bytes(), &round);
            for (s, r) in salted.iter_mut().zip(round) {
                *s ^= r;
            }
        }
        hmac(&salted, b"Client Key")
    }

    #[test]
    fn the_right_password_passes_and_a_wrong_one_fails() {
        let verifier = ScramVerifier::new("open sesame").expect("verifier");
        let first = server_first(b"n,,n=,r=abcdef", &verifier).expect("first");
        assert!(first.message.starts_with("r=abcdef"));
        let good = client_final(&first, "open sesame", "n,,");
        assert!(first.server_final(good.as_bytes(), &verifier).is_ok());
        let bad = client_final(&first, "open sesame!", "n,,");
        assert_eq!(
            first.server_final(bad.as_bytes(), &verifier),
            Err(ScramFailure::WrongProof)
        );
        // The binding flag must be the one of the first message.
        let switched = client_final(&first, "open sesame", "y,,");
        assert!(matches!(
            first.server_final(switched.as_bytes(), &verifier),
            Err(ScramFailure::Malformed(_))
        ));
    }

    #[test]
    fn malformed_and_binding_messages_are_refused() {
        let verifier = ScramVerifier::new("pw").expect("verifier");
        for bad in [
            &b"p=tls-server-end-point,,n=,r=x"[..],
            b"",
            b"n,,n=",
            b"n,a=bob,n=,r=x",
            b"\xff",
        ] {
            assert!(server_first(bad, &verifier).is_err(), "{bad:?}");
        }
        let mock = mock_verifier(&[7; 32], "nobody");
        assert_eq!(mock.salt(), mock_verifier(&[7; 32], "nobody").salt());
        assert_ne!(mock.salt(), mock_verifier(&[7; 32], "somebody").salt());
    }
}
