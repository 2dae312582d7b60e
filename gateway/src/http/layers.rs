//! The tower-http layers around every answer, built once from the config: CORS
//! (`cors`) and response compression (`compression`). With both off a request goes
//! straight to the handler: no tower service is built and the body is not wrapped
//! beyond one enum variant.
//!
//! CORS: a preflight from an allowed origin is answered 200 by tower-http without
//! reaching GraphQL; one from any other origin is answered 403 with a GraphQL error
//! naming the origin (tower-http would answer 200 without `Access-Control-Allow-Origin`,
//! which browsers refuse too, but which tells a person reading it nothing). Other
//! requests are served whatever their origin; only allowed origins get the CORS headers
//! that let a browser script read the answer.

use super::HandlerBody;
use crate::pipeline::error::RequestError;
use crate::pipeline::request::Media;
use graphfleet_config::{CompressionAlgorithm, CompressionConfig, CompressionLevel, CorsConfig};
use http::header::HeaderValue;
use http::{HeaderName, Method, Request, Response};
use http_body_util::Either;
use std::convert::Infallible;
use std::sync::Arc;
use tower::{Layer, ServiceExt};
use tower_http::compression::predicate::{And, NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{CompressionBody, CompressionLayer};
use tower_http::cors::{
    AllowCredentials, AllowHeaders, AllowOrigin, CorsLayer, ExposeHeaders, MaxAge,
};

/// A response as the listener writes it: the handler's body, or that body compressed.
pub type ResponseBody = Either<HandlerBody, CompressionBody<HandlerBody>>;

/// Compress responses at least `min_size` long, except streams (event streams and
/// incremental `multipart/mixed` answers): a part must not wait in a compressor's buffer.
type Compress = And<And<SizeAbove, NotForContentType>, NotForContentType>;

/// The configured layers; `None` for each one that is off.
#[derive(Clone, Default)]
pub struct HttpLayers {
    cors: Option<(CorsLayer, Arc<Origins>)>,
    compression: Option<CompressionLayer<Compress>>,
}

impl HttpLayers {
    /// The layers of a validated config (validation refuses what tower-http would panic on).
    pub fn new(cors: &CorsConfig, compression: &CompressionConfig) -> Self {
        Self {
            cors: cors.enabled().then(|| {
                let origins = Arc::new(Origins::new(cors));
                (cors_layer(cors, &origins), origins)
            }),
            compression: compression.enabled.then(|| compression_layer(compression)),
        }
    }

    /// From the gateway config.
    pub fn from_config(config: &graphfleet_config::Config) -> Self {
        Self::new(&config.cors, &config.compression)
    }

    /// Neither CORS nor compression.
    pub fn is_off(&self) -> bool {
        self.cors.is_none() && self.compression.is_none()
    }

    /// `handler`'s answer to `request` through the layers: a CORS preflight is answered
    /// without calling it; CORS headers are added and the body compressed as configured.
    pub async fn respond<B, F, Fut>(
        &self,
        request: Request<B>,
        mut handler: F,
    ) -> Response<ResponseBody>
    where
        F: FnMut(Request<B>) -> Fut,
        Fut: Future<Output = Response<HandlerBody>>,
    {
        if self.is_off() {
            return handler(request).await.map(Either::Left);
        }
        if let Some((_, origins)) = &self.cors
            && let Some(refused) = refused_preflight(origins, &request)
        {
            return refused.map(Either::Left);
        }
        let inner = tower::service_fn(move |request| {
            let answer = handler(request);
            async move { Ok::<_, Infallible>(answer.await) }
        });
        let cors = tower::ServiceBuilder::new()
            .option_layer(self.cors.as_ref().map(|(layer, _)| layer.clone()))
            .service(inner);
        let answer = match &self.compression {
            None => cors.oneshot(request).await.map(|r| r.map(Either::Left)),
            Some(compression) => compression
                .layer(cors)
                .oneshot(request)
                .await
                .map(|r| r.map(Either::Right)),
        };
        match answer {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// The origins CORS allows.
pub(super) struct Origins {
    any: bool,
    exact: Vec<HeaderValue>,
    patterns: Vec<regex::Regex>,
}

impl Origins {
    pub(super) fn new(config: &CorsConfig) -> Self {
        Self {
            any: config.any_origin(),
            exact: config
                .allow_origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect(),
            patterns: config.origin_regexes().unwrap_or_default(),
        }
    }

    pub(super) fn allow(&self, origin: &HeaderValue) -> bool {
        self.any
            || self.exact.contains(origin)
            || origin
                .to_str()
                .is_ok_and(|o| self.patterns.iter().any(|p| p.is_match(o)))
    }
}

/// The 403 answer to a CORS preflight (`OPTIONS` with `Origin` and
/// `Access-Control-Request-Method`) from an origin that is not allowed.
fn refused_preflight<B>(origins: &Origins, request: &Request<B>) -> Option<Response<HandlerBody>> {
    let headers = request.headers();
    if request.method() != Method::OPTIONS
        || !headers.contains_key(http::header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        return None;
    }
    let origin = headers.get(http::header::ORIGIN)?;
    if origins.allow(origin) {
        return None;
    }
    let shown = String::from_utf8_lossy(origin.as_bytes());
    let message = format!(
        "CORS preflight refused: origin {shown:?} is not in cors.allow_origins and matches \
         no cors.allow_origin_patterns"
    );
    let refused = RequestError::http(
        http::StatusCode::FORBIDDEN,
        Some("CORS_ORIGIN_NOT_ALLOWED"),
        &message,
    );
    let mut response = super::refuse(refused, Media::Json);
    // The answer depends on these request headers, as tower-http's own answers do.
    response.headers_mut().insert(
        http::header::VARY,
        HeaderValue::from_static(
            "origin, access-control-request-method, access-control-request-headers",
        ),
    );
    Some(response)
}

fn cors_layer(config: &CorsConfig, allowed: &Arc<Origins>) -> CorsLayer {
    let origins = if config.any_origin() {
        AllowOrigin::any()
    } else {
        let allowed = allowed.clone();
        AllowOrigin::predicate(move |origin: &HeaderValue, _| allowed.allow(origin))
    };
    // Only to allowed origins (tower-http would send it to any origin).
    let credentials = if config.allow_credentials {
        let allowed = allowed.clone();
        AllowCredentials::predicate(move |origin: &HeaderValue, _| allowed.allow(origin))
    } else {
        AllowCredentials::from(false)
    };
    let methods: Vec<Method> = config
        .allow_methods
        .iter()
        .filter_map(|m| Method::from_bytes(m.as_bytes()).ok())
        .collect();
    let names = |list: &[String]| -> Vec<HeaderName> {
        list.iter()
            .filter_map(|h| HeaderName::from_bytes(h.as_bytes()).ok())
            .collect()
    };
    let headers = if config.allow_headers.is_empty() {
        AllowHeaders::mirror_request()
    } else {
        AllowHeaders::list(names(&config.allow_headers))
    };
    let mut layer = CorsLayer::new()
        .allow_origin(origins)
        .allow_methods(methods)
        .allow_headers(headers)
        .allow_credentials(credentials);
    if !config.expose_headers.is_empty() {
        layer = layer.expose_headers(ExposeHeaders::list(names(&config.expose_headers)));
    }
    if let Some(max_age) = config.max_age {
        layer = layer.max_age(MaxAge::exact(max_age));
    }
    layer
}

fn compression_layer(config: &CompressionConfig) -> CompressionLayer<Compress> {
    let on = |a| config.algorithms.contains(&a);
    // `SizeAbove` compresses bodies of at least its size (every body has an exact size).
    let predicate = SizeAbove::new(config.min_size as u64)
        .and(NotForContentType::SSE)
        .and(NotForContentType::const_new("multipart/mixed"));
    CompressionLayer::new()
        .no_deflate()
        .gzip(on(CompressionAlgorithm::Gzip))
        .br(on(CompressionAlgorithm::Br))
        .zstd(on(CompressionAlgorithm::Zstd))
        .quality(match config.level {
            CompressionLevel::Fastest => tower_http::CompressionLevel::Fastest,
            CompressionLevel::Default => tower_http::CompressionLevel::Default,
            CompressionLevel::Best => tower_http::CompressionLevel::Best,
        })
        .compress_when(predicate)
}
