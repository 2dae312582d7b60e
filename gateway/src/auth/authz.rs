//! Enforcement of `@authenticated`, `@requiresScopes` and `@policy`. Per cached
//! operation, the distinct requirements its fields touch are listed once (at most 64);
//! per request each is evaluated against the claims into a bitmask of denied ones.
//! Mask 0 takes the ordinary cached plan; another mask gets its own plan (denied
//! fields left out of every subgraph request) and shapes (denied fields answered
//! with `null` and an `UNAUTHORIZED_FIELD_OR_TYPE` error), cached per (condition
//! values, mask). The pipeline's authorization stage (`pipeline::authorize`) asks for
//! the mask per request.

use super::jwt::Claims;
use crate::operation::shape::Shapes;
use crate::operation::{Condition, ConditionValues, OpIr, PreparedOperation, RequestErrors};
use crate::query_planner::{PlanBudget, PlanError, build_plan_within};
use crate::supergraph::Supergraph;
use crate::supergraph::auth::{AuthDirectives, Requirement, RequirementId};
use crate::supergraph::meta::{FederationMeta, TypeId};
use graphfleet_config::{AuthorizationConfig, PolicyRule};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::Arc;

pub use crate::response::writer::UNAUTHORIZED_CODE;

/// Most distinct requirements one operation may touch (one mask bit each).
const MAX_REQUIREMENTS: usize = 64;

/// The requirements of denied fields, one bit per [`OperationAuth::requirements`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AuthMask(pub u64);

impl AuthMask {
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// The `@policy` policies a coprocessor granted for one request (only those it
/// answered `true`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyGrants(pub Vec<String>);

/// What one cached operation needs from authorization.
pub struct OperationAuth<V> {
    /// The distinct requirements its fields touch; bit `i` of a mask is `requirements[i]`.
    requirements: Vec<RequirementId>,
    /// Per IR field, the bits of the requirements guarding it.
    field_bits: Vec<u64>,
    /// More requirements than a mask holds: every request is refused.
    too_many: bool,
    /// Plans and shapes per (condition values, non-empty mask), made on first use.
    variants: Mutex<FxHashMap<(ConditionValues, AuthMask), Arc<V>>>,
}

/// Variants kept per operation; cleared when full (the plan cache bounds the rest).
const VARIANTS_CAPACITY: usize = 64;

impl<V> OperationAuth<V> {
    /// The requirements `ir`'s fields touch in `supergraph`.
    pub fn of(supergraph: &Supergraph, ir: &OpIr) -> Self {
        let auth = &supergraph.auth;
        let meta = &supergraph.meta;
        let mut requirements: Vec<RequirementId> = Vec::new();
        let mut too_many = false;
        let field_bits = ir
            .fields
            .iter()
            .map(|f| {
                let mut bits = 0u64;
                if f.name.starts_with("__") {
                    return 0;
                }
                for id in guards(auth, meta, &f.parent_type, &f.name, f.ty.inner_named_type()) {
                    let i = match requirements.iter().position(|r| *r == id) {
                        Some(i) => i,
                        None => {
                            requirements.push(id);
                            requirements.len() - 1
                        }
                    };
                    match 1u64.checked_shl(i as u32) {
                        Some(bit) if i < MAX_REQUIREMENTS => bits |= bit,
                        _ => too_many = true,
                    }
                }
                bits
            })
            .collect();
        Self {
            requirements,
            field_bits,
            too_many,
            variants: Mutex::default(),
        }
    }

    /// The `@policy` policies the operation's fields touch, each once.
    pub fn policies(&self, auth: &AuthDirectives) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for id in &self.requirements {
            if let Requirement::Policies(any) = auth.requirement(*id) {
                for policy in any.iter().flatten() {
                    if !out.contains(policy) {
                        out.push(policy.clone());
                    }
                }
            }
        }
        out
    }

    /// The requirements the request fails, evaluated against its claims (and, for
    /// `@policy`, a coprocessor's `grants`).
    pub fn denied(
        &self,
        auth: &AuthDirectives,
        config: &AuthorizationConfig,
        claims: Option<&Claims>,
        grants: Option<&PolicyGrants>,
    ) -> Result<AuthMask, RequestErrors> {
        if self.too_many {
            return Err(RequestErrors(vec![crate::operation::limits::error(
                UNAUTHORIZED_CODE,
                format!(
                    "the operation touches more than {MAX_REQUIREMENTS} distinct authorization \
                     requirements"
                ),
            )]));
        }
        let mut mask = 0u64;
        for (i, id) in self.requirements.iter().enumerate() {
            if !satisfied(auth.requirement(*id), config, claims, grants) {
                mask |= 1 << i;
            }
        }
        Ok(AuthMask(mask))
    }

    /// Which IR fields `mask` denies (by `OpFieldId`).
    pub fn denied_fields(&self, mask: AuthMask) -> Vec<bool> {
        self.field_bits.iter().map(|b| b & mask.0 != 0).collect()
    }

    pub fn made(&self, values: ConditionValues, mask: AuthMask) -> Option<Arc<V>> {
        self.variants.lock().get(&(values, mask)).cloned()
    }

    pub fn keep(&self, values: ConditionValues, mask: AuthMask, variant: Arc<V>) {
        let mut variants = self.variants.lock();
        if variants.len() >= VARIANTS_CAPACITY {
            variants.clear();
        }
        variants.insert((values, mask), variant);
    }
}

/// The plan and shapes of `prepared` for a request with condition values `values`
/// that may not read the fields `mask` denies: those are excluded from planning (as an
/// `@include(if: false)` would) but kept in the shapes, marked unauthorized.
pub fn plan_denied<V>(
    auth: &OperationAuth<V>,
    meta: &FederationMeta,
    api_schema: &apollo_compiler::Schema,
    prepared: &PreparedOperation,
    values: ConditionValues,
    mask: AuthMask,
    budget: &PlanBudget,
) -> (Result<crate::query_planner::QueryPlan, PlanError>, Shapes) {
    let denied = auth.denied_fields(mask);
    let mut ir = prepared.ir.clone();
    for (field, denied) in ir.fields.iter_mut().zip(&denied) {
        if *denied {
            field.conditions.0.push(Condition::Literal {
                include: true,
                value: false,
            });
        }
    }
    let plan =
        crate::otel_span!("plan").in_scope(|| build_plan_within(meta, &ir, Some(values), budget));
    let shapes = Shapes::build_authorized(api_schema, &prepared.ir, Some(values), &denied);
    (plan, shapes)
}

/// The requirements guarding field `parent.name` returning `output`: the field's own,
/// its parent type's and its return type's. A field selected on an interface or union
/// is also guarded by each possible type's (it may resolve to any of them).
fn guards(
    auth: &AuthDirectives,
    meta: &FederationMeta,
    parent: &str,
    name: &str,
    output: &str,
) -> Vec<RequirementId> {
    let mut out: Vec<RequirementId> = Vec::new();
    let mut add = |ids: Option<&Vec<RequirementId>>| {
        for id in ids.into_iter().flatten() {
            if !out.contains(id) {
                out.push(*id);
            }
        }
    };
    let on_type = |tid: TypeId, add: &mut dyn FnMut(Option<&Vec<RequirementId>>)| {
        add(auth.on_type.get(&tid));
        if let Some(fid) = meta.field_of(tid, name) {
            add(auth.on_field.get(&fid));
        }
    };
    if let Some(tid) = meta.type_id(parent) {
        on_type(tid, &mut add);
        let possible = meta.ty(tid).possible_types.clone();
        for ty in &possible {
            if let Some(impl_id) = meta.type_id(ty) {
                on_type(impl_id, &mut add);
            }
        }
    }
    if let Some(tid) = meta.type_id(output) {
        add(auth.on_type.get(&tid));
    }
    out
}

/// Whether `claims` (absent: unauthenticated) meet `requirement`. A policy with a
/// rule in `authorization.policies` is decided by it; with `grants` (a coprocessor's
/// decisions), any other policy is granted when the coprocessor granted it.
pub fn satisfied(
    requirement: &Requirement,
    config: &AuthorizationConfig,
    claims: Option<&Claims>,
    grants: Option<&PolicyGrants>,
) -> bool {
    if let (Requirement::Policies(any), Some(grants)) = (requirement, grants) {
        return any.iter().any(|all| {
            all.iter().all(|p| match config.policies.get(p) {
                Some(rule) => claims.is_some_and(|c| granted(rule, c)),
                None => grants.0.contains(p),
            })
        });
    }
    let Some(claims) = claims else {
        return false;
    };
    match requirement {
        Requirement::Authenticated => true,
        Requirement::Scopes(any) => {
            let scopes = words(claims.get(&config.scope_claim));
            any.iter()
                .any(|all| all.iter().all(|s| scopes.contains(&s.as_str())))
        }
        Requirement::Policies(any) => any.iter().any(|all| {
            all.iter().all(|p| {
                config
                    .policies
                    .get(p)
                    .is_some_and(|rule| granted(rule, claims))
            })
        }),
    }
}

/// The words of a claim: a space-separated string, or an array of strings.
fn words(claim: Option<&serde_json::Value>) -> Vec<&str> {
    match claim {
        Some(serde_json::Value::String(s)) => s.split_whitespace().collect(),
        Some(serde_json::Value::Array(items)) => items.iter().filter_map(|v| v.as_str()).collect(),
        _ => Vec::new(),
    }
}

/// Whether the claims meet a policy's rule.
fn granted(rule: &PolicyRule, claims: &serde_json::Map<String, serde_json::Value>) -> bool {
    let mut path = rule.claim.split('.');
    let first = path.next().and_then(|k| claims.get(k));
    let value = path.fold(first, |v, k| v.and_then(|v| v.get(k)));
    let Some(value) = value else {
        return false;
    };
    if let Some(expected) = &rule.equals {
        return value == expected;
    }
    rule.contains
        .as_deref()
        .is_some_and(|wanted| words(Some(value)).contains(&wanted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(value: serde_json::Value) -> Claims {
        Arc::new(value.as_object().expect("an object").clone())
    }

    fn config() -> AuthorizationConfig {
        let mut config = AuthorizationConfig::default();
        config.policies.insert(
            "admin".to_owned(),
            PolicyRule {
                claim: "roles".to_owned(),
                equals: None,
                contains: Some("admin".to_owned()),
            },
        );
        config.policies.insert(
            "eu".to_owned(),
            PolicyRule {
                claim: "org.region".to_owned(),
                equals: Some(json!("eu")),
                contains: None,
            },
        );
        config
    }

    fn scopes(lists: &[&[&str]]) -> Requirement {
        Requirement::Scopes(
            lists
                .iter()
                .map(|l| l.iter().map(|s| (*s).to_owned()).collect())
                .collect(),
        )
    }

    #[test]
    fn authenticated_needs_claims() {
        let config = config();
        assert!(!satisfied(&Requirement::Authenticated, &config, None, None));
        let c = claims(json!({}));
        assert!(satisfied(
            &Requirement::Authenticated,
            &config,
            Some(&c),
            None
        ));
    }

    #[test]
    fn scopes_are_any_of_all_of_from_a_string_or_array() {
        let config = config();
        let req = scopes(&[&["read:a", "read:b"], &["admin"]]);
        for scope in [json!("read:a read:b other"), json!(["read:b", "read:a"])] {
            let c = claims(json!({ "scope": scope }));
            assert!(satisfied(&req, &config, Some(&c), None), "{scope}");
        }
        let c = claims(json!({ "scope": "read:a" }));
        assert!(
            !satisfied(&req, &config, Some(&c), None),
            "only one of the first list"
        );
        let c = claims(json!({ "scope": "admin" }));
        assert!(satisfied(&req, &config, Some(&c), None), "the second list");
        let c = claims(json!({ "scope": 3 }));
        assert!(!satisfied(&req, &config, Some(&c), None), "not words");
        assert!(!satisfied(&req, &config, None, None));
        assert!(
            !satisfied(&scopes(&[]), &config, Some(&c), None),
            "no alternative"
        );
        let mut other = config.clone();
        other.scope_claim = "scp".to_owned();
        let c = claims(json!({ "scp": ["admin"] }));
        assert!(satisfied(&req, &other, Some(&c), None), "configured claim");
    }

    #[test]
    fn policies_follow_the_configured_rules() {
        let config = config();
        let policies = |lists: &[&[&str]]| {
            Requirement::Policies(
                lists
                    .iter()
                    .map(|l| l.iter().map(|s| (*s).to_owned()).collect())
                    .collect(),
            )
        };
        let admin_eu = policies(&[&["admin", "eu"]]);
        let c = claims(json!({ "roles": ["user", "admin"], "org": { "region": "eu" } }));
        assert!(satisfied(&admin_eu, &config, Some(&c), None));
        let c = claims(json!({ "roles": "admin", "org": { "region": "us" } }));
        assert!(
            !satisfied(&admin_eu, &config, Some(&c), None),
            "equals fails"
        );
        assert!(satisfied(&policies(&[&["admin"]]), &config, Some(&c), None));
        let c = claims(json!({ "roles": ["user"] }));
        assert!(!satisfied(
            &policies(&[&["admin"]]),
            &config,
            Some(&c),
            None
        ));
        assert!(
            !satisfied(&policies(&[&["unknown"]]), &config, Some(&c), None),
            "a policy without a rule is never granted"
        );
    }

    #[test]
    fn coprocessor_grants_decide_policies_without_rules() {
        let config = config();
        let policies = |p: &str| Requirement::Policies(vec![vec![p.to_owned()]]);
        let grants = PolicyGrants(vec!["read".to_owned()]);
        assert!(satisfied(&policies("read"), &config, None, Some(&grants)));
        assert!(!satisfied(&policies("write"), &config, None, Some(&grants)));
        assert!(
            !satisfied(&policies("read"), &config, None, None),
            "no grants"
        );
        let c = claims(json!({ "roles": ["admin"] }));
        let none = PolicyGrants::default();
        assert!(
            satisfied(&policies("admin"), &config, Some(&c), Some(&none)),
            "a rule still decides its policy"
        );
        assert!(!satisfied(&policies("admin"), &config, None, Some(&grants)));
    }

    const SUPERGRAPH: &str = include_str!("../../tests/auth/supergraph.graphql");

    #[test]
    fn operations_list_the_requirements_their_fields_touch() {
        let supergraph = Supergraph::parse(SUPERGRAPH).expect("fixture supergraph");
        assert!(!supergraph.auth.is_empty());
        let query = "{ products { id name price secret { note } } }";
        let prepared = crate::operation::prepare(&supergraph.api_schema, query, None)
            .expect("valid operation");
        let auth = OperationAuth::<()>::of(&supergraph, &prepared.ir);
        let config = config();
        let none = auth
            .denied(&supergraph.auth, &config, None, None)
            .expect("few requirements");
        assert!(!none.is_empty(), "unauthenticated: something is denied");
        let denied: Vec<_> = prepared
            .ir
            .fields
            .iter()
            .zip(auth.denied_fields(none))
            .filter(|(_, d)| *d)
            .map(|(f, _)| f.name.to_string())
            .collect();
        assert!(denied.contains(&"price".to_owned()), "{denied:?}");
        assert!(!denied.contains(&"name".to_owned()), "{denied:?}");
        let all = claims(json!({ "scope": "read:price read:secret", "roles": ["admin"] }));
        let mask = auth
            .denied(&supergraph.auth, &config, Some(&all), None)
            .expect("few requirements");
        assert!(mask.is_empty(), "every requirement met: {mask:?}");
        let plain =
            crate::operation::prepare(&supergraph.api_schema, "{ products { name } }", None)
                .expect("valid operation");
        let untouched = OperationAuth::<()>::of(&supergraph, &plain.ir);
        assert!(untouched.requirements.is_empty());
    }
}
