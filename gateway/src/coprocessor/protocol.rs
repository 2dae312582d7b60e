//! Apollo Router's coprocessor protocol, version 1: the one JSON object sent to the
//! coprocessor and read back, the checks an answer must pass, the context merge rules
//! and the bodies a `break` answers with. No I/O here.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

pub const VERSION: u64 = 1;

/// The stages, spelt as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    RouterRequest,
    RouterResponse,
    SupergraphRequest,
    SupergraphResponse,
    SubgraphRequest,
    SubgraphResponse,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RouterRequest => "RouterRequest",
            Stage::RouterResponse => "RouterResponse",
            Stage::SupergraphRequest => "SupergraphRequest",
            Stage::SupergraphResponse => "SupergraphResponse",
            Stage::SubgraphRequest => "SubgraphRequest",
            Stage::SubgraphResponse => "SubgraphResponse",
        }
    }

    pub fn is_request(self) -> bool {
        matches!(
            self,
            Stage::RouterRequest | Stage::SupergraphRequest | Stage::SubgraphRequest
        )
    }

    /// Router stages carry the body as a string; the others as JSON.
    fn body_is_text(self) -> bool {
        matches!(self, Stage::RouterRequest | Stage::RouterResponse)
    }
}

/// `"continue"` or `{"break": <status>}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Control {
    Continue,
    Break(u16),
}

/// `context`: `{"entries": {...}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    #[serde(default)]
    pub entries: Map<String, Value>,
}

/// Headers on the wire: lowercase name to every value.
pub type WireHeaders = BTreeMap<String, Vec<String>>;

/// The object sent and read back. Keys without a value are left out (but `id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Payload {
    pub version: u64,
    pub stage: Stage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Control>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<WireHeaders>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdl: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subgraph_request_id: Option<String>,
}

impl Payload {
    /// A payload for `stage` of request `id`, with `control: "continue"` at request
    /// stages and nothing else yet.
    pub fn new(stage: Stage, id: &str) -> Self {
        Self {
            version: VERSION,
            stage,
            control: stage.is_request().then_some(Control::Continue),
            id: Some(id.to_owned()),
            headers: None,
            body: None,
            context: None,
            sdl: None,
            path: None,
            method: None,
            service_name: None,
            uri: None,
            status_code: None,
            subgraph_request_id: None,
        }
    }
}

/// Why an answer is refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtocolError {
    #[error("the answer is not a coprocessor payload: {0}")]
    Malformed(String),
    #[error("the answer has version {0}; expected 1")]
    Version(u64),
    #[error("the answer is for stage {found}; expected {expected}")]
    Stage {
        expected: &'static str,
        found: &'static str,
    },
    #[error("the answer at {0} has no `control`")]
    MissingControl(&'static str),
    #[error("`control.break` {0} is not an HTTP status")]
    BreakStatus(u16),
    #[error("`body` at {0} must be a string")]
    TextBody(&'static str),
    #[error("invalid header {0:?}")]
    Header(String),
    #[error("the returned body is not a GraphQL response: {0}")]
    NotGraphQL(String),
}

/// `text` read as the answer to a call at `sent`.
pub fn read_answer(sent: Stage, text: &[u8]) -> Result<Payload, ProtocolError> {
    let answer: Payload =
        serde_json::from_slice(text).map_err(|e| ProtocolError::Malformed(e.to_string()))?;
    if answer.version != VERSION {
        return Err(ProtocolError::Version(answer.version));
    }
    if answer.stage != sent {
        return Err(ProtocolError::Stage {
            expected: sent.as_str(),
            found: answer.stage.as_str(),
        });
    }
    match answer.control {
        None if sent.is_request() => return Err(ProtocolError::MissingControl(sent.as_str())),
        Some(Control::Break(code)) if !(100..=999).contains(&code) => {
            return Err(ProtocolError::BreakStatus(code));
        }
        _ => {}
    }
    if sent.body_is_text() && answer.body.as_ref().is_some_and(|b| !b.is_string()) {
        return Err(ProtocolError::TextBody(sent.as_str()));
    }
    Ok(answer)
}

/// `headers` as the wire writes them; values that are not UTF-8 are left out.
pub fn headers_out(headers: &http::HeaderMap) -> WireHeaders {
    let mut out = WireHeaders::new();
    for (name, value) in headers {
        if let Ok(value) = value.to_str() {
            let values = out.entry(name.as_str().to_owned()).or_default();
            values.push(value.to_owned());
        }
    }
    out
}

/// Returned headers as a header map; `content-length` is the gateway's to set.
pub fn headers_in(headers: &WireHeaders) -> Result<http::HeaderMap, ProtocolError> {
    let mut out = http::HeaderMap::new();
    for (name, values) in headers {
        let header = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ProtocolError::Header(name.clone()))?;
        if header == http::header::CONTENT_LENGTH {
            continue;
        }
        for value in values {
            let value = http::HeaderValue::from_str(value)
                .map_err(|_| ProtocolError::Header(format!("{name}: {value}")))?;
            out.append(header.clone(), value);
        }
    }
    Ok(out)
}

/// Request stages: each returned entry is inserted or overwritten; none is deleted.
pub fn merge_at_request(entries: &mut Map<String, Value>, returned: Context) {
    entries.extend(returned.entries);
}

/// Response stages: the returned entries are inserted, and every key that was sent
/// (`sent`) but is missing from the answer is deleted: leaving a key out deletes it.
pub fn merge_at_response(entries: &mut Map<String, Value>, sent: &[String], returned: Context) {
    for key in sent {
        if !returned.entries.contains_key(key) {
            entries.remove(key);
        }
    }
    entries.extend(returned.entries);
}

/// Whether `body` is a GraphQL response: an object with `data`, or with a non-empty
/// `errors` list of objects with a `message`.
pub fn check_graphql_response(body: &Value) -> Result<(), ProtocolError> {
    let bad = |why: &str| Err(ProtocolError::NotGraphQL(why.to_owned()));
    let Some(object) = body.as_object() else {
        return bad("not a JSON object");
    };
    let errors = match object.get("errors") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(errors)) => errors,
        Some(_) => return bad("`errors` is not a list"),
    };
    for error in errors {
        if !error.get("message").is_some_and(Value::is_string) {
            return bad("an error has no string `message`");
        }
    }
    if !matches!(
        object.get("extensions"),
        None | Some(Value::Null | Value::Object(_))
    ) {
        return bad("`extensions` is not an object");
    }
    if !object.contains_key("data") && errors.is_empty() {
        return bad("neither `data` nor `errors`");
    }
    Ok(())
}

fn error_body(message: &str, code: &str) -> Value {
    json!({ "errors": [{ "message": message, "extensions": { "code": code } }] })
}

/// The GraphQL body a `break` at `stage` answers with, from the returned `body`.
/// Router and subgraph stages take a string that is not JSON as an error message; the
/// supergraph stage (like everything else) must return a GraphQL response.
pub fn break_body(stage: Stage, body: Option<Value>) -> Value {
    let parsed = match (stage, body) {
        (Stage::RouterRequest, None) => return error_body("", "ERROR"),
        (Stage::RouterRequest, Some(Value::String(text))) => {
            match serde_json::from_str::<Value>(&text) {
                Ok(value) => value,
                Err(_) => return error_body(&text, "ERROR"),
            }
        }
        (Stage::SubgraphRequest, Some(Value::String(text))) => return error_body(&text, "ERROR"),
        (_, Some(value)) => value,
        (_, None) => Value::Null,
    };
    match check_graphql_response(&parsed) {
        Ok(()) => parsed,
        Err(e) => error_body(
            &format!("couldn't deserialize coprocessor output body: {e}"),
            "EXTERNAL_DESERIALIZATION_ERROR",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_serialize_as_the_protocol_spells_them() {
        let mut payload = Payload::new(Stage::SubgraphRequest, "abc");
        payload.service_name = Some("products".to_owned());
        payload.context = Some(Context::default());
        let text = serde_json::to_value(&payload).expect("serializes");
        assert_eq!(
            text,
            json!({"version": 1, "stage": "SubgraphRequest", "control": "continue",
                   "id": "abc", "serviceName": "products", "context": {"entries": {}}})
        );
        let response =
            serde_json::to_value(Payload::new(Stage::RouterResponse, "x")).expect("serializes");
        assert_eq!(
            response,
            json!({"version": 1, "stage": "RouterResponse", "id": "x"})
        );
        let broke: Payload = serde_json::from_value(
            json!({"version": 1, "stage": "RouterRequest", "control": {"break": 401}}),
        )
        .expect("parses");
        assert_eq!(broke.control, Some(Control::Break(401)));
    }

    #[test]
    fn answers_are_checked() {
        let read = |v: Value, stage| read_answer(stage, v.to_string().as_bytes());
        let ok = json!({"version": 1, "stage": "RouterRequest", "control": "continue"});
        assert!(read(ok, Stage::RouterRequest).is_ok());
        let v2 = json!({"version": 2, "stage": "RouterRequest", "control": "continue"});
        assert_eq!(
            read(v2, Stage::RouterRequest),
            Err(ProtocolError::Version(2))
        );
        let other = json!({"version": 1, "stage": "RouterResponse", "control": "continue"});
        assert!(matches!(
            read(other, Stage::RouterRequest),
            Err(ProtocolError::Stage { .. })
        ));
        let no_control = json!({"version": 1, "stage": "SubgraphRequest"});
        assert!(matches!(
            read(no_control.clone(), Stage::SubgraphRequest),
            Err(ProtocolError::MissingControl(_))
        ));
        let response = json!({"version": 1, "stage": "SubgraphResponse"});
        assert!(read(response, Stage::SubgraphResponse).is_ok());
        let capital = json!({"version": 1, "stage": "RouterRequest", "control": "Continue"});
        assert!(read(capital, Stage::RouterRequest).is_err());
        let big = json!({"version": 1, "stage": "RouterRequest", "control": {"break": 1000}});
        assert_eq!(
            read(big, Stage::RouterRequest),
            Err(ProtocolError::BreakStatus(1000))
        );
        let json_body = json!({"version": 1, "stage": "RouterResponse", "body": {}});
        assert!(read(json_body, Stage::RouterResponse).is_err());
        let missing = json!({"stage": "RouterRequest", "control": "continue"});
        assert!(read(missing, Stage::RouterRequest).is_err());
        assert!(read_answer(Stage::RouterRequest, b"not json").is_err());
    }

    #[test]
    fn request_stages_upsert_and_response_stages_delete_what_is_left_out() {
        let mut entries = Map::new();
        entries.insert("a".into(), json!(1));
        entries.insert("b".into(), json!(2));
        let returned = |v: Value| Context {
            entries: v.as_object().expect("object").clone(),
        };
        merge_at_request(&mut entries, returned(json!({"b": 3, "c": 4})));
        assert_eq!(
            Value::Object(entries.clone()),
            json!({"a": 1, "b": 3, "c": 4})
        );
        let sent = vec!["a".to_owned(), "b".to_owned()];
        merge_at_response(&mut entries, &sent, returned(json!({"b": null, "d": 5})));
        assert_eq!(Value::Object(entries), json!({"b": null, "c": 4, "d": 5}));
    }

    #[test]
    fn break_bodies_follow_the_stage() {
        let text = |s: &str| Some(Value::String(s.to_owned()));
        assert_eq!(
            break_body(Stage::RouterRequest, text("not allowed")),
            error_body("not allowed", "ERROR")
        );
        assert_eq!(
            break_body(Stage::RouterRequest, None),
            error_body("", "ERROR")
        );
        let errors = json!({"errors": [{"message": "no"}]});
        assert_eq!(
            break_body(Stage::RouterRequest, text(&errors.to_string())),
            errors
        );
        let code = |v: Value| v["errors"][0]["extensions"]["code"].clone();
        assert_eq!(
            code(break_body(Stage::RouterRequest, text("{}"))),
            "EXTERNAL_DESERIALIZATION_ERROR"
        );
        assert_eq!(
            code(break_body(Stage::SupergraphRequest, text("no"))),
            "EXTERNAL_DESERIALIZATION_ERROR"
        );
        assert_eq!(
            code(break_body(Stage::SubgraphRequest, text("no"))),
            "ERROR"
        );
        let data = json!({"data": {"a": 1}});
        assert_eq!(break_body(Stage::SubgraphRequest, Some(data.clone())), data);
    }

    #[test]
    fn headers_round_trip_without_content_length() {
        let mut headers = http::HeaderMap::new();
        headers.append("x-a", "1".parse().expect("value"));
        headers.append("x-a", "2".parse().expect("value"));
        headers.insert("content-length", "9".parse().expect("value"));
        let wire = headers_out(&headers);
        assert_eq!(wire["x-a"], vec!["1", "2"]);
        let back = headers_in(&wire).expect("valid");
        assert_eq!(back.get_all("x-a").iter().count(), 2);
        assert!(!back.contains_key("content-length"));
        let bad: WireHeaders = [("bad name".to_owned(), vec![])].into();
        assert!(headers_in(&bad).is_err());
    }
}
