"""Kubernetes' own name rules, for the names an action sends back to the API server.

From k8s.io/apimachinery/pkg/util/validation/validation.go: ``IsDNS1123Label`` is
``[a-z0-9]([-a-z0-9]*[a-z0-9])?`` and at most 63 characters (``DNS1123LabelMaxLength``);
``IsDNS1123Subdomain`` is such labels joined by ``.``, at most 253 characters
(``DNS1123SubdomainMaxLength``). A namespace is a label (k8s.io/apimachinery/pkg/api/validation:
``ValidateNamespaceName = NameIsDNSLabel``), a pod name a subdomain (kubernetes
pkg/apis/core/validation: ``ValidatePodName = apimachineryvalidation.NameIsDNSSubdomain``).
Neither can hold a ``/``, so ``namespace/name`` of two valid names splits one way only.
"""

from __future__ import annotations

import re

from hpctui.base.sanitize import clean_text

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL, re.ASCII)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*", re.ASCII)
_SHOWN = 80  # a hostile name is shown cut to this many characters


class PodTargetError(ValueError):
    """A pod target that is not ``namespace/name`` of two valid Kubernetes names (the message says why)."""


def _shown(value: str) -> str:
    text = clean_text(value)
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


def namespace_problem(namespace: str) -> str | None:
    """Why ``namespace`` is not a valid Kubernetes namespace name (an RFC 1123 label), or None."""
    if len(namespace) > DNS1123_LABEL_MAX:
        return f"namespace {_shown(namespace)} is longer than {DNS1123_LABEL_MAX} characters"
    if not _DNS1123_LABEL.fullmatch(namespace):
        return (f"namespace {_shown(namespace)} is not a valid Kubernetes namespace (RFC 1123 label: "
                "lower-case letters, digits and '-', starting and ending with a letter or digit)")
    return None


def pod_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid Kubernetes pod name (an RFC 1123 subdomain), or None."""
    if len(name) > DNS1123_SUBDOMAIN_MAX:
        return f"pod name {_shown(name)} is longer than {DNS1123_SUBDOMAIN_MAX} characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(name):
        return (f"pod name {_shown(name)} is not a valid Kubernetes pod name (RFC 1123 subdomain: "
                "lower-case letters, digits, '-' and '.', each part starting and ending with a letter or digit)")
    return None


def pod_problem(namespace: str, name: str) -> str | None:
    """Why (``namespace``, ``name``) cannot name a pod in a request, or None."""
    return namespace_problem(namespace) or pod_name_problem(name)


def pod_target(namespace: str, name: str) -> str:
    """The action target of a pod: ``namespace/name`` (raises :class:`PodTargetError` unless both are valid)."""
    problem = pod_problem(namespace, name)
    if problem:
        raise PodTargetError(problem)
    return f"{namespace}/{name}"


def split_pod_target(target: str) -> tuple[str, str]:
    """``namespace/name`` → (namespace, name), both valid Kubernetes names; else :class:`PodTargetError`."""
    namespace, sep, name = target.partition("/")
    if not sep:
        raise PodTargetError(f"pod {_shown(target)} is not namespace/name")
    problem = pod_problem(namespace, name)
    if problem:
        raise PodTargetError(f"pod {_shown(target)}: {problem}")
    return namespace, name
