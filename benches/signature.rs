//! What verifying a Web Bot Auth signature costs a signed request, beside the floor it cannot
//! go under: one raw Ed25519 verification of the same signature base, measured in the same run.
//! The signed requests include what the proxy does after checking: the use of the signature
//! (its digest) looked up, and remembered, in a single instance's memory. Also a signed
//! request with a fresh nonce (remembered per request), an unsigned request
//! (the one header lookup every request pays), and an attacker's `Signature-Input` of 1 MB
//! with 10,000 labels, which the size and label limits must refuse before any parsing.
//! Run: `cargo bench --bench signature`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use crawlgate::catalog::Catalog;
use crawlgate::proxy::store::memory::MemoryStore;
use crawlgate::proxy::store::MemoryLimits;
use crawlgate::proxy::verify::signature::check::RequestView;
use crawlgate::proxy::verify::signature::directory::Trust;
use crawlgate::proxy::verify::signature::keys::KeySet;
use crawlgate::proxy::verify::signature::reuse;
use crawlgate::proxy::verify::signature::{
    DirectorySettings, SignatureSettings, SignatureVerdict, Signatures,
};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier};
use http::{HeaderMap, HeaderValue};
use sha2::{Digest, Sha256};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

const DIRECTORY: &str = "https://agent.example";
const AUTHORITY: &str = "shop.example";

struct Fixture {
    key: SigningKey,
    keyid: String,
    signatures: Signatures,
    /// Where the proxy remembers each signature's use (a single instance's memory).
    store: MemoryStore,
    holder: reuse::Digest,
}

impl Fixture {
    /// What the proxy does with a signed request: check it, then its use.
    fn verify(&self, headers: &HeaderMap) -> bool {
        match self
            .signatures
            .check(&view(headers), None, SystemTime::now())
        {
            SignatureVerdict::Verified { reuse, .. } => {
                self.store.use_signature_now(&reuse, &self.holder)
            }
            _ => false,
        }
    }
}

fn fixture() -> Fixture {
    let key = SigningKey::from_bytes(&[7; 32]);
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes());
    let keyid = URL_SAFE_NO_PAD.encode(Sha256::digest(
        format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#).as_bytes(),
    ));
    let settings = SignatureSettings {
        directories: vec![DirectorySettings {
            url: DIRECTORY.into(),
            bot: Some("ChatGPT-User".into()),
            jwks: None,
        }],
        ..SignatureSettings::default()
    };
    let trust = Trust::new(&settings, &Catalog::default());
    let signatures = Signatures::new(trust, None);
    let jwks = format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}"#);
    signatures.keys.put(
        &Arc::from(DIRECTORY),
        KeySet::from_jwks(jwks.as_bytes(), 32).unwrap(),
        false,
    );
    let store = MemoryStore::new(MemoryLimits {
        max_tracked: 100_000,
        remember_fetches: std::time::Duration::from_secs(3600),
        dns_entries: 100_000,
        signature_uses: 100_000,
        unlisted_signature_uses: 10_000,
    });
    let holder = reuse::holder("192.0.2.1".parse().unwrap(), "site", b"ChatGPT-User");
    Fixture {
        key,
        keyid,
        signatures,
        store,
        holder,
    }
}

/// A signed request's headers (with `nonce`, when given), and its signature base and signature.
fn signed(f: &Fixture, nonce: Option<&str>) -> (HeaderMap, String, Signature) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let nonce = nonce.map_or(String::new(), |n| format!(r#";nonce="{n}""#));
    let params = format!(
        r#"("@authority" "signature-agent";key="sig1");created={};expires={};keyid="{}";alg="ed25519"{nonce};tag="web-bot-auth""#,
        now - 1,
        now + 3600,
        f.keyid
    );
    let agent = format!("\"{DIRECTORY}\"");
    let base = format!(
        "\"@authority\": {AUTHORITY}\n\"signature-agent\";key=\"sig1\": {agent}\n\"@signature-params\": {params}"
    );
    let signature = f.key.sign(base.as_bytes());
    let mut headers = HeaderMap::new();
    let mut put = |name: &'static str, value: String| {
        headers.insert(name, HeaderValue::from_str(&value).unwrap());
    };
    put(
        "user-agent",
        "Mozilla/5.0 (compatible; ChatGPT-User/1.0; +https://openai.com/bot)".into(),
    );
    put("accept", "text/html".into());
    put("signature-input", format!("sig1={params}"));
    put(
        "signature",
        format!("sig1=:{}:", STANDARD.encode(signature.to_bytes())),
    );
    put("signature-agent", format!("sig1={agent}"));
    (headers, base, signature)
}

fn view(headers: &HeaderMap) -> RequestView<'_> {
    RequestView {
        headers,
        method: "GET",
        authority: AUTHORITY,
        path_and_query: "/products/42",
        scheme: "https",
    }
}

fn signature(c: &mut Criterion) {
    let f = fixture();
    let (headers, base, signature) = signed(&f, None);
    let verifying = f.key.verifying_key();
    assert!(f.verify(&headers));
    let mut group = c.benchmark_group("signature");
    group.bench_function("raw_ed25519_verify", |b| {
        b.iter(|| {
            verifying
                .verify(black_box(base.as_bytes()), black_box(&signature))
                .unwrap()
        })
    });
    // Without a nonce: its holder using it again, as a crawler reusing its signature does.
    group.bench_function("signed_request", |b| {
        b.iter(|| f.verify(black_box(&headers)))
    });
    let mut counter = 0u64;
    group.bench_function("signed_request_with_nonce", |b| {
        b.iter_batched(
            || {
                counter += 1;
                signed(&f, Some(&format!("nonce-{counter}"))).0
            },
            |headers| assert!(f.verify(&headers)),
            BatchSize::SmallInput,
        )
    });
    let mut unsigned = HeaderMap::new();
    unsigned.insert(
        "user-agent",
        HeaderValue::from_static("Mozilla/5.0 Firefox/128.0"),
    );
    unsigned.insert("accept", HeaderValue::from_static("text/html"));
    group.bench_function("unsigned_request", |b| {
        b.iter(|| {
            black_box(
                f.signatures
                    .check(&view(black_box(&unsigned)), None, SystemTime::now()),
            )
        })
    });
    let (huge, _, _) = signed(&f, None);
    let huge = oversized(huge);
    let refused = f.signatures.check(&view(&huge), None, SystemTime::now());
    assert!(
        matches!(refused, SignatureVerdict::Invalid { .. }),
        "{refused:?}"
    );
    group.bench_function("oversized_signature_input", |b| {
        b.iter(|| {
            black_box(
                f.signatures
                    .check(&view(black_box(&huge)), None, SystemTime::now()),
            )
        })
    });
    group.finish();
}

/// A signed request whose `Signature-Input` is replaced by 1 MB (under pingora's 1 MiB header
/// limit) of 10,000 labels, each tagged
/// `web-bot-auth` with every parameter the profile asks for, so that nothing short of a limit
/// stops a parser from reading them all.
fn oversized(mut headers: HeaderMap) -> HeaderMap {
    let padding = "k".repeat(33);
    let labels: Vec<String> = (0..10_000)
        .map(|i| {
            format!(
                r#"l{i}=("@authority");created=1;expires=2;keyid="{padding}";tag="web-bot-auth""#
            )
        })
        .collect();
    let value = labels.join(", ");
    assert!(
        (1_000_000..1 << 20).contains(&value.len()),
        "{}",
        value.len()
    );
    headers.insert("signature-input", HeaderValue::from_str(&value).unwrap());
    headers
}

criterion_group!(benches, signature);
criterion_main!(benches);
