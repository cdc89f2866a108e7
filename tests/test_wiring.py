"""One wiring path: a worker process builds the engine's stack from the same settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstrata.config import Settings, load_settings, settings_from_env
from memstrata.errors import ConfigError
from memstrata.wiring import QDRANT_DIR, worker_handler
from memstrata.working import EmbeddedValkey


def test_a_worker_honours_the_deployments_settings_file(
    embedded_valkey: EmbeddedValkey, tmp_path: Path
) -> None:
    settings = tmp_path / "memstrata.json"
    settings.write_text(
        json.dumps(
            {
                "data_dir": str(tmp_path / "data"),
                "longterm": {"adjacent_blend": 0.3, "context_terms": [0.4]},
                "memory": {"redis_prefix": "zz", "near_duplicate_cosine": 0.8},
            }
        )
    )
    handler = worker_handler(redis_url=embedded_valkey.url, settings=str(settings))
    try:
        store = handler.store
        assert store.settings.redis_prefix == "zz"
        assert store.settings.near_duplicate_cosine == 0.8
        assert store.longterm.settings.adjacent_blend == 0.3
        assert store.longterm.settings.context_terms == (0.4,)
        assert (tmp_path / "data" / QDRANT_DIR).is_dir()  # the embedded index under data_dir
    finally:
        store.longterm.close()


def test_settings_files_are_validated_by_name(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps({"longterm": {"adjacent_blend": 0.2}, "pipeline": {"batch_size": 7}})
    )
    loaded = load_settings(path)
    assert loaded.longterm.adjacent_blend == 0.2 and loaded.pipeline.batch_size == 7
    assert loaded.retrieval == Settings().retrieval  # what the file leaves out is default
    for body, name in (
        ({"longterm": {"nope": 1}}, "longterm.nope"),
        ({"pipeline": {"batch_size": 0}}, "batch_size"),
        ({"longterm": {"adjacent_blend": 2}}, "longterm.adjacent_blend"),
        ({"memory": []}, "memory"),
    ):
        path.write_text(json.dumps(body))
        with pytest.raises(ConfigError, match=name):
            load_settings(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="settings file"):
        load_settings(path)


def test_the_environment_names_the_file_and_overrides_it(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"data_dir": "/from/file", "memory": {"redis_prefix": "ff"}}))
    env = {"MEMSTRATA_SETTINGS": str(path), "MEMSTRATA_REDIS_URL": "redis://h:6379"}
    settings = settings_from_env(env)
    assert settings.memory.redis_prefix == "ff" and settings.data_dir == Path("/from/file")
    assert settings.redis_url == "redis://h:6379"
    assert settings_from_env(env, data_dir=tmp_path).data_dir == tmp_path


def test_a_worker_process_takes_what_its_options_leave_out_from_the_settings(
    tmp_path: Path,
) -> None:
    from memstrata.worker import parse_options

    path = tmp_path / "s.json"
    path.write_text(
        json.dumps(
            {
                "redis_url": "redis://h:6379",
                "pipeline": {"queue_name": "q7", "batch_size": 7, "block_ms": 300},
            }
        )
    )
    settings = settings_from_env({"MEMSTRATA_SETTINGS": str(path)})
    options = parse_options(["--consumer", "c", "--handler", "json:dumps"], settings)
    assert (options.redis_url, options.queue, options.batch_size) == ("redis://h:6379", "q7", 7)
    assert options.block_ms == 300 and options.maxlen == settings.pipeline.queue_maxlen
    given = parse_options(
        ["--consumer", "c", "--handler", "json:dumps", "--queue", "other", "--batch-size", "3"],
        settings,
    )
    assert (given.queue, given.batch_size, given.block_ms) == ("other", 3, 300)
    with pytest.raises(SystemExit):  # no URL anywhere
        parse_options(["--consumer", "c", "--handler", "json:dumps"], Settings())
