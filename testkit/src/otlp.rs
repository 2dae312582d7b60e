//! A real OTLP/gRPC trace receiver on loopback that keeps every span it is sent, for
//! tests of span export.

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
pub use opentelemetry_proto::tonic::trace::v1::Span;
use std::sync::{Arc, Mutex};

/// The receiver; it serves until dropped.
pub struct OtlpCollector {
    /// `http://127.0.0.1:PORT`, the OTLP/gRPC endpoint to export to.
    pub endpoint: String,
    spans: Received,
    server: tokio::task::JoinHandle<()>,
}

#[derive(Default, Clone)]
struct Received(Arc<Mutex<Vec<Span>>>);

#[tonic::async_trait]
impl TraceService for Received {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let spans = request
            .into_inner()
            .resource_spans
            .into_iter()
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans);
        self.0.lock().expect("spans lock").extend(spans);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

impl OtlpCollector {
    /// Serve on an ephemeral loopback port (needs a tokio runtime).
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port for the OTLP receiver");
        let endpoint = format!("http://{}", listener.local_addr().expect("bound address"));
        let spans = Received::default();
        let service = TraceServiceServer::new(spans.clone());
        let server = tokio::spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            // Ends only with an I/O error or when the test drops the collector.
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
        OtlpCollector {
            endpoint,
            spans,
            server,
        }
    }

    /// Every span received so far, in arrival order.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.0.lock().expect("spans lock").clone()
    }
}

impl Drop for OtlpCollector {
    fn drop(&mut self) {
        self.server.abort();
    }
}
