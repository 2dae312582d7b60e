//! Tokens for the tests: an ES256 key made per run (rcgen), its JWKS, and claims the
//! [`config`] accepts.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use graphfleet_gateway::config::{Config, JwksSource, PolicyRule};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const ISSUER: &str = "https://issuer.test";
pub const AUDIENCE: &str = "graphfleet";

pub struct TestKey {
    kid: String,
    encoding: EncodingKey,
    pub jwk: Value,
}

impl TestKey {
    pub fn es256(kid: &str) -> Self {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .expect("generate a P-256 key");
        let point = pair.public_key_raw(); // 0x04 || x || y
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..]),
        });
        let encoding =
            EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).expect("PKCS#8 EC key");
        Self {
            kid: kid.to_owned(),
            encoding,
            jwk,
        }
    }

    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign a token")
    }
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// Claims [`config`] accepts (valid for 10 minutes), with `extra` merged in.
pub fn claims(extra: Value) -> Value {
    let mut base = json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": "u1", "exp": now() + 600 });
    for (k, v) in extra.as_object().expect("an object") {
        base[k] = v.clone();
    }
    base
}

/// Authentication against `key`'s JWKS (written to `dir`), no leeway, and the policy
/// `admin` (the `roles` claim contains `admin`).
pub fn config(key: &TestKey, dir: &Path) -> Config {
    let file = dir.join("jwks.json");
    let jwks = json!({ "keys": [key.jwk.clone()] }).to_string();
    std::fs::write(&file, jwks).expect("write the JWKS");
    let mut config = Config::default();
    config.authentication.jwks = vec![JwksSource {
        file: Some(file),
        url: None,
        refresh_interval: Duration::from_secs(60),
        ca_file: None,
    }];
    config.authentication.issuers = vec![ISSUER.to_owned()];
    config.authentication.audiences = vec![AUDIENCE.to_owned()];
    config.authentication.leeway = Duration::ZERO;
    config.authorization.policies.insert(
        "admin".to_owned(),
        PolicyRule {
            claim: "roles".to_owned(),
            equals: None,
            contains: Some("admin".to_owned()),
        },
    );
    config
}
