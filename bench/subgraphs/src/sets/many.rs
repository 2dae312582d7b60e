//! The many-plans set: seven subgraphs whose `User`, `Post` and `Comment`
//! entities (several keys) share @shareable fields, so every field has several
//! possible sources. Values are pure functions of the ids, so every subgraph
//! and the monolith agree; the validated schema decides what each one exposes.

use serde_json::Value;

use crate::engine::{Args, Object, Service, Val, key_string, representation};

const USERS: usize = 10;
const POSTS_PER_USER: usize = 3;
const COMMENTS_PER_POST: usize = 2;
const POSTS: usize = USERS * POSTS_PER_USER;
const COMMENTS: usize = POSTS * COMMENTS_PER_POST;

#[derive(Clone, Copy)]
enum Entity {
    User(usize),
    Post(usize),
    Comment(usize),
}

fn int<'a>(value: usize) -> Val<'a> {
    Val::Int(i64::try_from(value).unwrap_or(i64::MAX))
}

impl<'a> Object<'a> for Entity {
    fn typename(&self) -> &'a str {
        match self {
            Entity::User(_) => "User",
            Entity::Post(_) => "Post",
            Entity::Comment(_) => "Comment",
        }
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        match (*self, name) {
            (Entity::User(u), "id") | (Entity::Post(u), "id") | (Entity::Comment(u), "id") => {
                Val::String(u.to_string())
            }
            (Entity::User(u), "email") => Val::String(format!("user{u}@example.com")),
            (Entity::User(u), "name") => Val::String(format!("User {u}")),
            (Entity::User(u), "age") => int(20 + u),
            (Entity::User(u), "bio") => Val::String(format!("User {u} writes about federation.")),
            (Entity::User(u), "karma") => int(u * 7),
            (Entity::User(u), "posts") => {
                list((1..=POSTS_PER_USER).map(|j| Entity::Post((u - 1) * POSTS_PER_USER + j)))
            }
            (Entity::Post(p), "slug") => Val::String(format!("post-{p}")),
            (Entity::Post(p), "title") => Val::String(format!("Post {p}")),
            (Entity::Post(p), "body") => Val::String(format!(
                "The body of post {p}, shared by several subgraphs."
            )),
            (Entity::Post(p), "score") => int(p * 13 % 100),
            (Entity::Post(p), "author") => Val::obj(Entity::User((p - 1) / POSTS_PER_USER + 1)),
            (Entity::Post(p), "comments") => list(
                (1..=COMMENTS_PER_POST).map(|j| Entity::Comment((p - 1) * COMMENTS_PER_POST + j)),
            ),
            (Entity::Comment(c), "text") => Val::String(format!("Comment {c}")),
            (Entity::Comment(c), "votes") => int(c % 7),
            (Entity::Comment(c), "author") => Val::obj(Entity::User(c % USERS + 1)),
            (Entity::Comment(c), "post") => Val::obj(Entity::Post((c - 1) / COMMENTS_PER_POST + 1)),
            (Entity::Comment(c), "createdAt") => Val::String(format!("2025-01-{:02}", c % 28 + 1)),
            _ => Val::Null,
        }
    }
}

fn list<'a>(items: impl Iterator<Item = Entity>) -> Val<'a> {
    Val::List(
        items
            .map(|e| Val::Obj(Box::new(e) as Box<dyn Object<'a> + 'a>))
            .collect(),
    )
}

/// Parses a numeric id, optionally after a prefix (`post-3`, `user3@example.com`).
fn parse_id(text: &str, prefix: &str, suffix: &str, max: usize) -> Option<usize> {
    let n: usize = text
        .strip_prefix(prefix)?
        .strip_suffix(suffix)?
        .parse()
        .ok()?;
    (1..=max).contains(&n).then_some(n)
}

/// An entity key: field, text around the number in its value, id range, constructor.
type Key = (
    &'static str,
    &'static str,
    &'static str,
    usize,
    fn(usize) -> Entity,
);

pub struct ManyPlans;

struct Query;

impl<'a> Object<'a> for Query {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        match name {
            "users" => list((1..=USERS).map(Entity::User)),
            "posts" => list((1..=POSTS).map(Entity::Post)),
            "comments" => list((1..=COMMENTS).map(Entity::Comment)),
            _ => Val::Null,
        }
    }
}

impl Service for ManyPlans {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(Query)
    }

    fn entity(&self, rep: &Value) -> Val<'_> {
        let typename = rep
            .get("__typename")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // Several keys: try each key this type has, in order.
        let keys: &[Key] = match typename {
            "User" => &[
                ("id", "", "", USERS, Entity::User),
                ("email", "user", "@example.com", USERS, Entity::User),
            ],
            "Post" => &[
                ("id", "", "", POSTS, Entity::Post),
                ("slug", "post-", "", POSTS, Entity::Post),
            ],
            "Comment" => &[("id", "", "", COMMENTS, Entity::Comment)],
            _ => return Val::Err(format!("Unknown entity type {typename:?}.")),
        };
        let present = keys.iter().find(|(key, ..)| rep.get(*key).is_some());
        let Some((key, prefix, suffix, max, make)) = present else {
            return match representation(rep, keys[0].0) {
                Err(e) => Val::Err(e),
                Ok(_) => Val::Null,
            };
        };
        let Some(text) = rep.get(*key).and_then(key_string) else {
            return Val::Err(format!(
                "Key field \"{key}\" of {typename} must be a scalar."
            ));
        };
        parse_id(&text, prefix, suffix, *max).map_or(Val::Null, |n| Val::obj(make(n)))
    }
}
