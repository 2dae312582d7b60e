//! The supergraph's demand-control directives (`@cost`, `@listSize` from
//! `https://specs.apollo.dev/cost/v0.1`, under the names the link imports them as),
//! read once at load into flat tables indexed by [`TypeId`] and [`FieldId`], plus the
//! argument and input-field definitions a cost estimate needs to score argument values.

use crate::meta::{FederationMeta, FieldId, TypeId};
use apollo_compiler::ast::{Directive, DirectiveList, InputValueDefinition, Value};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::{Name, Node, Schema};

/// `@listSize` on a field definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListSize {
    pub assumed_size: Option<u64>,
    /// Arguments whose value is the list's size (the largest given one counts).
    pub slicing_arguments: Vec<Name>,
    /// Child fields of a connection-like type the size applies to.
    pub sized_fields: Vec<Name>,
    /// Whether a request must give exactly one slicing argument (the spec's default).
    pub require_one_slicing_argument: bool,
}

/// An argument or input-field definition, as cost scoring sees it.
#[derive(Debug, Clone)]
pub struct InputValueCost {
    pub name: Name,
    /// Its named type, when the supergraph defines it (built-in scalars are not).
    pub ty: Option<TypeId>,
    /// `@cost(weight:)` on the definition.
    pub weight: Option<f64>,
    /// The schema default, used for slicing arguments the request leaves out.
    pub default: Option<Node<Value>>,
}

/// Demand-control tables of a supergraph. Without a cost link they hold only the
/// argument and input-field definitions (default costs still apply).
#[derive(Debug, Clone, Default)]
pub struct CostDirectives {
    /// `@cost` on objects, scalars and enums, by [`TypeId`].
    pub type_weight: Vec<Option<f64>>,
    /// `@cost` on field definitions, by [`FieldId`].
    pub field_weight: Vec<Option<f64>>,
    /// `@listSize`, by [`FieldId`].
    pub list_size: Vec<Option<ListSize>>,
    /// Argument definitions, by [`FieldId`].
    pub arguments: Vec<Vec<InputValueCost>>,
    /// Input-object fields, by [`TypeId`] (empty for other kinds).
    pub input_fields: Vec<Vec<InputValueCost>>,
    /// Whether the supergraph links the cost spec at all.
    pub linked: bool,
}

/// Local names of `@cost` and `@listSize`.
struct Names {
    cost: String,
    list_size: String,
}

impl Names {
    /// The names the cost link gives the two directives: an import's `as:`, the bare
    /// name when imported as is, else `@<prefix>` / `@<prefix>__listSize`.
    fn of(schema: &Schema) -> Option<Self> {
        let link = schema.schema_definition.directives.iter().find(|d| {
            super::arg_str(d, "url")
                .is_some_and(|u| u.starts_with("https://specs.apollo.dev/cost/"))
        })?;
        // `@cost` is the spec's own name, so it is `@<prefix>` unless imported.
        let prefix = super::arg_str(link, "as").unwrap_or("cost");
        let mut names = Names {
            cost: prefix.to_owned(),
            list_size: format!("{prefix}__listSize"),
        };
        let imports = match link
            .specified_argument_by_name("import")
            .map(|v| v.as_ref())
        {
            Some(Value::List(items)) => items.clone(),
            _ => Vec::new(),
        };
        for import in &imports {
            let (name, local) = match import.as_ref() {
                Value::String(s) => (s.as_str(), s.as_str()),
                Value::Object(fields) => {
                    let get = |key: &str| {
                        fields
                            .iter()
                            .find(|(k, _)| k == key)
                            .and_then(|(_, v)| v.as_str())
                    };
                    let Some(name) = get("name") else { continue };
                    (name, get("as").unwrap_or(name))
                }
                _ => continue,
            };
            let local = local.trim_start_matches('@').to_owned();
            match name {
                "@cost" => names.cost = local,
                "@listSize" => names.list_size = local,
                _ => {}
            }
        }
        Some(names)
    }
}

impl CostDirectives {
    pub fn read(schema: &Schema, meta: &FederationMeta) -> Self {
        let names = Names::of(schema);
        let mut out = Self {
            type_weight: vec![None; meta.types.len()],
            field_weight: vec![None; meta.fields.len()],
            list_size: vec![None; meta.fields.len()],
            arguments: vec![Vec::new(); meta.fields.len()],
            input_fields: vec![Vec::new(); meta.types.len()],
            linked: names.is_some(),
        };
        let cost_name = names.as_ref().map(|n| n.cost.as_str());
        let weight = |list: &DirectiveList| {
            cost_name
                .and_then(|n| list.get(n))
                .and_then(|d| weight_arg(d))
        };
        for (name, ty) in &schema.types {
            let Some(tid) = meta.type_id(name) else {
                continue;
            };
            let type_directives = match ty {
                ExtendedType::Object(t) => Some(&t.directives),
                ExtendedType::Scalar(t) => Some(&t.directives),
                ExtendedType::Enum(t) => Some(&t.directives),
                _ => None,
            };
            out.type_weight[tid.index()] = type_directives
                .zip(cost_name)
                .and_then(|(list, n)| list.get(n))
                .and_then(|d| weight_arg(d));
            if let ExtendedType::InputObject(t) = ty {
                out.input_fields[tid.index()] = t
                    .fields
                    .values()
                    .map(|f| input_value(meta, &weight, f))
                    .collect();
            }
            let fields = match ty {
                ExtendedType::Object(t) => &t.fields,
                ExtendedType::Interface(t) => &t.fields,
                _ => continue,
            };
            for (field, def) in fields {
                let Some(fid) = meta.field_of(tid, field) else {
                    continue;
                };
                out.field_weight[fid.index()] = weight(&def.directives);
                out.list_size[fid.index()] = names
                    .as_ref()
                    .and_then(|n| def.directives.get(&n.list_size))
                    .map(|d| list_size(d));
                out.arguments[fid.index()] = def
                    .arguments
                    .iter()
                    .map(|a| input_value(meta, &weight, a))
                    .collect();
            }
        }
        out
    }

    pub fn type_weight(&self, id: TypeId) -> Option<f64> {
        self.type_weight.get(id.index()).copied().flatten()
    }

    pub fn field_weight(&self, id: FieldId) -> Option<f64> {
        self.field_weight.get(id.index()).copied().flatten()
    }

    pub fn list_size(&self, id: FieldId) -> Option<&ListSize> {
        self.list_size.get(id.index()).and_then(Option::as_ref)
    }

    pub fn arguments(&self, id: FieldId) -> &[InputValueCost] {
        self.arguments.get(id.index()).map_or(&[], Vec::as_slice)
    }

    pub fn input_fields(&self, id: TypeId) -> &[InputValueCost] {
        self.input_fields.get(id.index()).map_or(&[], Vec::as_slice)
    }
}

fn input_value(
    meta: &FederationMeta,
    weight: &impl Fn(&DirectiveList) -> Option<f64>,
    def: &InputValueDefinition,
) -> InputValueCost {
    InputValueCost {
        name: def.name.clone(),
        ty: meta.type_id(def.ty.inner_named_type()),
        weight: weight(&def.directives),
        default: def.default_value.clone(),
    }
}

fn weight_arg(d: &Directive) -> Option<f64> {
    match d.specified_argument_by_name("weight").map(|v| v.as_ref()) {
        Some(Value::Int(i)) => i.try_to_i32().ok().map(f64::from),
        _ => None,
    }
}

fn list_size(d: &Directive) -> ListSize {
    let names = |arg: &str| -> Vec<Name> {
        match d.specified_argument_by_name(arg).map(|v| v.as_ref()) {
            Some(Value::List(items)) => items
                .iter()
                .filter_map(|i| i.as_str().and_then(|s| Name::new(s).ok()))
                .collect(),
            _ => Vec::new(),
        }
    };
    let assumed_size = match d
        .specified_argument_by_name("assumedSize")
        .map(|v| v.as_ref())
    {
        Some(Value::Int(i)) => i.try_to_i32().ok().and_then(|n| u64::try_from(n).ok()),
        _ => None,
    };
    ListSize {
        assumed_size,
        slicing_arguments: names("slicingArguments"),
        sized_fields: names("sizedFields"),
        require_one_slicing_argument: d
            .specified_argument_by_name("requireOneSlicingArgument")
            .and_then(|v| v.to_bool())
            .unwrap_or(true),
    }
}

#[cfg(test)]
mod tests {
    use crate::Supergraph;

    const SUPERGRAPH: &str = include_str!("../tests/fixtures/cost.graphql");

    #[test]
    fn reads_renamed_cost_and_list_size_into_tables() {
        let sg = Supergraph::parse(SUPERGRAPH).expect("fixture supergraph loads");
        let (meta, cost) = (&sg.meta, &sg.cost);
        assert!(cost.linked);
        let fid = |t: &str, f: &str| meta.field_id(t, f).expect("field exists");
        let tid = |t: &str| meta.type_id(t).expect("type exists");
        assert_eq!(cost.field_weight(fid("Query", "products")), Some(5.0));
        assert_eq!(cost.field_weight(fid("Query", "top")), None);
        assert_eq!(cost.type_weight(tid("Product")), Some(6.0));
        assert_eq!(cost.type_weight(tid("Money")), Some(4.0));
        assert_eq!(cost.type_weight(tid("Color")), Some(2.0));
        let products = cost.list_size(fid("Query", "products")).expect("@listSize");
        assert_eq!(products.slicing_arguments, ["first", "last"]);
        assert!(!products.require_one_slicing_argument);
        let page = cost.list_size(fid("Query", "page")).expect("@listSize");
        assert_eq!(page.sized_fields, ["items"]);
        assert!(page.require_one_slicing_argument, "the spec's default");
        assert_eq!(
            cost.list_size(fid("Query", "top"))
                .and_then(|l| l.assumed_size),
            Some(7)
        );
        let args = cost.arguments(fid("Query", "products"));
        assert_eq!(args[0].weight, Some(2.0));
        let filter = args[2].ty.expect("Filter is a supergraph type");
        assert_eq!(cost.input_fields(filter)[0].weight, Some(3.0));
    }

    #[test]
    fn reads_directives_imported_under_federation_names() {
        let text = include_str!("../tests/fixtures/cost-unimported.graphql");
        let sg = Supergraph::parse(text).expect("fixture supergraph loads");
        let (meta, cost) = (&sg.meta, &sg.cost);
        let fid = |t: &str, f: &str| meta.field_id(t, f).expect("field exists");
        assert_eq!(cost.field_weight(fid("Query", "fieldWithCost")), Some(5.0));
        let tid = meta.type_id("ExpensiveObject").expect("type");
        assert_eq!(cost.type_weight(tid), Some(40.0));
        assert_eq!(
            cost.arguments(fid("Query", "argWithCost"))[0].weight,
            Some(10.0)
        );
        let dynamic = cost
            .list_size(fid("Query", "fieldWithDynamicListSize"))
            .expect("@federation__listSize");
        assert_eq!(dynamic.sized_fields, ["ints"]);
        assert_eq!(
            cost.list_size(fid("Query", "fieldWithListSize"))
                .and_then(|l| l.assumed_size),
            Some(2000)
        );
    }

    #[test]
    fn without_a_cost_link_only_definitions_are_read() {
        let text = include_str!("../tests/fixtures/cost.graphql").replace(
            "@link(url: \"https://specs.apollo.dev/cost/v0.1\"",
            "@link(url: \"https://example.com/other/v0.1\"",
        );
        // The directives stay defined but are no longer the cost spec's.
        let sg = Supergraph::parse(&text).expect("another spec's link loads");
        assert!(!sg.cost.linked);
        assert!(sg.cost.field_weight.iter().all(Option::is_none));
        assert!(sg.cost.list_size.iter().all(Option::is_none));
    }
}
