"""Bearer-token authentication and a small RBAC-like rule set (also answering SelfSubjectAccessReviews)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    """Allows (or, as a forbid hook, denies) verbs on resources; "*" matches anything."""

    verbs: tuple = ("*",)
    groups: tuple = ("*",)
    resources: tuple = ("*",)  # "jobs", "pods/log", "pods/*"
    namespaces: tuple = ("*",)  # "" is cluster scope
    names: tuple = ("*",)

    def matches(self, verb: str, group: str, resource: str, subresource: str, namespace: str, name: str) -> bool:
        """Whether this rule covers the request."""
        full = f"{resource}/{subresource}" if subresource else resource
        return (_has(self.verbs, verb) and _has(self.groups, group) and _has(self.namespaces, namespace or "")
                and (_has(self.resources, full) or bool(subresource) and f"{resource}/*" in self.resources)
                and _has(self.names, name or ""))


def _has(allowed, value) -> bool:
    return "*" in allowed or value in allowed


@dataclass
class User:
    """Who a token authenticates as; `rules=None` means cluster-admin."""

    name: str
    groups: tuple = ("system:authenticated",)
    rules: list | None = None


@dataclass
class Auth:
    """Tokens, per-user rules and forbid hooks that deny even an admin."""

    users: dict = field(default_factory=dict)  # token -> User
    forbidden: list = field(default_factory=list)  # Rules denied to everybody
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_token(self, token: str, user: str, rules: list[Rule] | None = None) -> None:
        """Accept a bearer token for a user (rules=None: everything allowed)."""
        with self.lock:
            self.users[token] = User(user, rules=rules)

    def authenticate(self, header: str | None) -> User | None:
        """The user of an `Authorization: Bearer ...` header, or None."""
        if not header or not header.startswith("Bearer "):
            return None
        with self.lock:
            return self.users.get(header[len("Bearer "):].strip())

    def forbid(self, rule: Rule) -> None:
        """Make matching requests answer 403 for every user."""
        with self.lock:
            self.forbidden.append(rule)

    def clear_forbidden(self) -> None:
        """Remove every forbid hook."""
        with self.lock:
            self.forbidden.clear()

    def allowed(self, user: User, verb: str, group: str, resource: str, subresource: str = "",
                namespace: str = "", name: str = "") -> bool:
        """Whether the user may do this."""
        args = (verb, group, resource, subresource, namespace, name)
        with self.lock:
            if any(rule.matches(*args) for rule in self.forbidden):
                return False
            return user.rules is None or any(rule.matches(*args) for rule in user.rules)


def forbidden_message(user: User, verb: str, group: str, resource: str, subresource: str, namespace: str,
                      name: str) -> str:
    """How RBAC words a denial."""
    qualified = f"{resource}.{group}" if group else resource
    what = f'{qualified} "{name}"' if name else qualified
    sub = f"/{subresource}" if subresource else ""  # the authorizer names a subresource "pods/log"
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    return (f'{what} is forbidden: User "{user.name}" cannot {verb} resource "{resource}{sub}" '
            f'in API group "{group}"{where}')


def access_review(auth: Auth, user: User, review: dict) -> dict:
    """Answer a SelfSubjectAccessReview for the calling user."""
    attrs = (review.get("spec") or {}).get("resourceAttributes") or {}
    allowed = auth.allowed(user, attrs.get("verb", ""), attrs.get("group", ""), attrs.get("resource", ""),
                           attrs.get("subresource", ""), attrs.get("namespace", ""), attrs.get("name", ""))
    status = {"allowed": allowed}
    if allowed:
        status["reason"] = 'RBAC: allowed by ClusterRoleBinding "fake-kube-admin"' if user.rules is None else \
            f'RBAC: allowed by RoleBinding "{user.name}"'
    return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "spec": review.get("spec") or {}, "status": status}
