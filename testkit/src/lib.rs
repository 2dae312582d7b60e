//! Test helpers: a real local Kubernetes control plane (etcd, kube-apiserver, kwok) per test run.
