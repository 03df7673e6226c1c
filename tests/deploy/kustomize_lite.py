"""Enough of kustomize to render deploy/kubernetes without the tool (kustomize
and kubectl are not installable here): resources (files and directories),
`labels` (metadata only), `images` (newName/newTag) and strategic-merge
`patches` by kind + name (maps merge, lists replace, as for HPA metrics)."""
import copy
import pathlib

import yaml

SUPPORTED_KEYS = {"apiVersion", "kind", "resources", "labels", "images", "patches"}


def load_yaml_docs(path: pathlib.Path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert docs, f"{path}: no YAML document"
    return docs


def merge(base, patch):
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = merge(base[k], v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(patch)


def _set_image(doc, images):
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        name, _, tag = c["image"].partition(":")
        for img in images:
            if img["name"] == name:
                c["image"] = f"{img.get('newName', name)}:{img.get('newTag', tag or 'latest')}"


def render(directory: pathlib.Path, seen_files=None):
    """Returns the rendered documents; every file read is added to seen_files."""
    seen_files = seen_files if seen_files is not None else set()
    kfile = directory / "kustomization.yaml"
    assert kfile.is_file(), f"{directory}: no kustomization.yaml"
    seen_files.add(kfile.resolve())
    k = yaml.safe_load(kfile.read_text())
    unknown = set(k) - SUPPORTED_KEYS
    assert not unknown, f"{kfile}: keys this renderer does not know: {unknown}"
    assert k.get("kind") == "Kustomization", kfile
    docs = []
    for res in k.get("resources", []):
        path = (directory / res)
        assert path.exists(), f"{kfile}: resource {res} does not exist"
        if path.is_dir():
            docs.extend(render(path, seen_files))
        else:
            seen_files.add(path.resolve())
            docs.extend(load_yaml_docs(path))
    for p in k.get("patches", []):
        path = directory / p["path"]
        assert path.is_file(), f"{kfile}: patch {p['path']} does not exist"
        seen_files.add(path.resolve())
        for patch in load_yaml_docs(path):
            targets = [i for i, d in enumerate(docs)
                       if d["kind"] == patch["kind"] and d["metadata"]["name"] == patch["metadata"]["name"]]
            assert len(targets) == 1, f"{path}: patch matches {len(targets)} resources"
            docs[targets[0]] = merge(docs[targets[0]], patch)
    for group in k.get("labels", []):
        for d in docs:
            d.setdefault("metadata", {}).setdefault("labels", {}).update(group["pairs"])
    for d in docs:
        _set_image(d, k.get("images", []))
    return docs
