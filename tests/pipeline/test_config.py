"""Configuration: schema validation messages and run-table resolution."""

from pathlib import Path

import pytest
import yaml

from fedrepro.engines import ENGINES
from fedrepro.errors import ConfigError
from fedrepro.experiments.runtable import OPERATIONAL_KEYS, build_run_table, load_paper_config, resolve_paper, run_id_of
from fedrepro.numerics import VERSIONS
from fedrepro.utils.digest import config_digest
from fedrepro.validate import check_reading_methods, load_and_validate, with_defaults

CONFIG = Path(__file__).resolve().parents[2] / "config"


@pytest.mark.parametrize(
    "override, expected",
    [
        ({"scal": "quick"}, ["'scal' was unexpected", "allowed keys", "scale"]),
        ({"scale": "huge"}, ["scale", "'huge'", "smoke, quick, paper"]),
        ({"device": 3}, ["device", "not of type 'string'"]),
        ({"papers": ["fedpag"]}, ["papers.0", "'fedpag'", "allowed values", "fedpage"]),
        ({"seed_plan": "sequential"}, ["seed_plan", "'sequential'", "fixed, adaptive"]),
        ({"max_seeds": {"quick": 2}}, ["max_seeds.quick", "minimum of 3"]),
        ({"max_seeds": {"paper": 51}}, ["max_seeds.paper", "maximum of 50"]),
        ({"max_seeds": {"quik": 5}}, ["max_seeds", "'quik' was unexpected", "paper, quick, smoke"]),
        ({"seed_budget_minutes": {"smoke": 0}}, ["seed_budget_minutes.smoke", "minimum of 0"]),
        ({"seed_budget_minutes": {"smoke": float("inf")}}, ["seed_budget_minutes.smoke", "not a finite number"]),
    ],
)
def test_bad_top_level_config_names_key_and_allowed_values(override, expected):
    with pytest.raises(ConfigError) as info:
        load_and_validate(override, CONFIG)
    for text in expected:
        assert text in str(info.value)


def test_a_per_scale_setting_given_in_part_keeps_the_other_scales_defaults():
    full = with_defaults({"seed_plan": "adaptive", "max_seeds": {"quick": 12}})
    assert full["max_seeds"] == {"smoke": 4, "quick": 12, "paper": 10} and full["seed_plan"] == "adaptive"
    assert with_defaults({})["seed_plan"] == "fixed"  # make reproduce keeps one look


def _paper_config_dir(tmp_path: Path, edit, folder: str = "papers", paper: str = "fedpage") -> Path:
    """A copy of config/papers/, config/claims/ and config/variants/ with <paper>.yaml of `folder` edited."""
    for sub in ("papers", "claims", "variants"):
        (tmp_path / sub).mkdir(parents=True)
        for path in (CONFIG / sub).glob("*.yaml"):
            (tmp_path / sub / path.name).write_text(path.read_text())
    cfg = yaml.safe_load((CONFIG / folder / f"{paper}.yaml").read_text())
    edit(cfg)
    (tmp_path / folder / f"{paper}.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path


def _claim(cfg: dict, claim_id: str) -> dict:
    return next(c for c in cfg["claims"] if c["id"] == claim_id)


@pytest.mark.parametrize(
    "edit, expected",
    [
        # a misspelt parameter would otherwise be ignored and the claim judged with the default
        (lambda c: _claim(c, "C7").update(facter=0.5), ["C7", "'facter' is not a parameter", "factor"]),
        (lambda c: _claim(c, "C7").update(check="compare_finals"), ["unknown check 'compare_finals'", "compare_final"]),
        (lambda c: _claim(c, "C7").pop("b"), ["C7", "needs 'b'"]),
        (lambda c: _claim(c, "C7").update(figures=["fig2z"]), ["unknown figure 'fig2z'", "fig2a"]),
        (lambda c: c["claims"].append(dict(_claim(c, "C7"))), ["'C7' is used twice"]),
        (lambda c: c.update(metrik="x"), ["unknown key 'metrik'", "allowed keys", "claims"]),
        # to the leaf: every column and value a parameter names must exist in the claim's figures (at some
        # scale, in the paper's terms), every statistic, choice and bound must be one the check knows
        (lambda c: _claim(c, "C7").update(a={"methd": "fedpage"}),
         ["claim C7: a: 'methd' is not a column of figures fig2a, fig2b, fig3a, fig3b", "allowed: ", "method"]),
        (lambda c: _claim(c, "C7").update(a={"method": "fedpagee"}),
         ["claim C7: a: method 'fedpagee' is not in figures", "allowed values: fedavg, fedpage, scaffold"]),
        (lambda c: _claim(c, "C1a").update(b={"curve": ["FedPAGE-1", "FedPAGE-30"]}),
         ["claim C1a: b: curve 'FedPAGE-30' is not in figures fig1a, fig1b", "FedPAGE-10"]),
        (lambda c: _claim(c, "C7").update(b={"method": "fedavg", "panel": "N=3250"}), ["b: panel 'N=3250'"]),
        (lambda c: _claim(c, "C7").update(per=["panle"]), ["claim C7: per: 'panle' is not a column", "panel"]),
        (lambda c: _claim(c, "C10").update(sampled="s"), ["claim C10: sampled: 's' is not a column", "S"]),
        (lambda c: _claim(c, "C7").update(require="fractoin"),
         ["claim C7: require: 'fractoin' is not one of all, most, fraction"]),
        (lambda c: _claim(c, "C7").update(require="fraction"), ["claim C7: require: 'fraction' needs a 'fraction'"]),
        (lambda c: _claim(c, "C7").update(fraction=0.6), ["claim C7: fraction: read only with require: fraction"]),
        (lambda c: _claim(c, "C7").update(stat="finall"),
         ["claim C7: stat: 'finall' is not allowed; allowed values: final, auc, g0, T_<eps>"]),
        (lambda c: _claim(c, "C7").update(factor="abc"), ["claim C7: factor: 'abc' is not a number"]),
        (lambda c: _claim(c, "C7").update(factor="1e-4"), ["claim C7: factor: '1e-4' is not a number"]),
        (lambda c: _claim(c, "C7").update(factor=0), ["claim C7: factor: 0 is not > 0"]),
        (lambda c: _claim(c, "C7").update(per="panel"), ["claim C7: per: 'panel' is not a list of strings"]),
        (lambda c: _claim(c, "C7").update(metric="grad_nrom"),
         ["claim C7: metric: 'grad_nrom' is not a metric of engine finite_sum; allowed values: grad_norm, loss"]),
    ],
)
def test_bad_claims_file_stops_at_start_up(tmp_path, edit, expected):
    config_dir = _paper_config_dir(tmp_path, edit, folder="claims")
    with pytest.raises(ConfigError) as info:
        load_and_validate({"scale": "smoke"}, config_dir)
    assert "config/claims/fedpage.yaml" in str(info.value).replace(str(tmp_path) + "/", "config/")
    assert "\n" not in str(info.value)  # one problem, one line
    for text in expected:
        assert text in str(info.value)


def test_misspelt_run_setting_is_caught_with_its_name(tmp_path):
    config_dir = _paper_config_dir(tmp_path, lambda c: c["methods"]["scaffold"].update(eta_tidle=0.1))
    with pytest.raises(ConfigError) as info:
        load_and_validate({"scale": "smoke"}, config_dir)
    assert "'eta_tidle' was unexpected" in str(info.value)
    assert "eta_tilde" in str(info.value)  # the allowed keys are listed
    # named as the user wrote it: the file, the figure, panel and curve (the run's hash only beside them)
    assert "config/papers/fedpage.yaml: figures." in str(info.value) and "curve 'SCAFFOLD" in str(info.value)


def test_a_setting_that_does_not_apply_to_the_algorithm_is_refused_by_name(tmp_path):
    """FedPAGE splits its step by c_l: a step_split (FedAvg's and SCAFFOLD's) on it would be silently ignored."""
    config_dir = _paper_config_dir(tmp_path, lambda c: c["methods"]["fedpage"].update(step_split="global_sqrt_S"))
    with pytest.raises(ConfigError, match="step_split does not apply with these settings"):
        load_and_validate({"scale": "smoke"}, config_dir)


def _run_of(cfg: dict, method: str) -> dict:
    """One run of `method` in a paper's configuration, at the paper scale."""
    return next(spec for spec in resolve_paper(cfg, "paper")[0].values() if spec["method"] == method)


@pytest.mark.parametrize("paper, method, setting", [
    ("fedpage", "scaffold", "c_l"),  # FedPAGE's local step (algorithms/fedpage.py settings)
    ("fedpage", "fedpage", "b"),  # FedAvg's and SCAFFOLD's minibatch: FedPAGE has b1, b2, b3
    ("fedvr", "fedavg_svrg", "local_steps"),  # the two FedAvg baselines' (algorithms/fedvr.py BASELINE_SETTINGS)
    ("fedvr", "fedavg_prob", "agents_per_round"),  # [4]'s FedAvg only
    ("fedvr", "fedavg_prob", "delta"),  # FedAvg-SVRG's step
    ("defedavg", "fedbuff", "favano_reweight"),  # FAVANO's protocol option (asynchrony/simulate.py PROTOCOLS)
])
def test_a_setting_only_another_method_reads_is_refused_by_name(paper, method, setting):
    """A setting the run's method never reads would be ignored, silently: the engine refuses what the registry says
    only other methods read (and so an alternative reading that sets it need not name the method)."""
    cfg = load_paper_config(CONFIG / "papers" / f"{paper}.yaml")
    engine, spec = ENGINES[cfg["engine"]], _run_of(cfg, method)
    engine.check_limits(spec, "a run")  # as it is, it passes
    value = next(s[setting] for s in resolve_paper(cfg, "paper")[0].values() if setting in s)
    with pytest.raises(ConfigError, match=f"a run: {setting} does not apply to algorithm '{spec['algorithm']}'"):
        engine.check_limits({**spec, setting: value}, "a run")


def test_a_reading_that_sets_methods_names_every_method_that_takes_the_setting():
    """A method added to the paper whose runs take step_split (FedAvg-like) is named by the step_split reading's
    alternative, or under readings=all it would keep the primary split, silently; {} says the reading leaves it."""
    cfg = load_paper_config(CONFIG / "papers" / "fedpage.yaml")
    where = "config/papers/fedpage.yaml"
    check_reading_methods(cfg, resolve_paper(cfg, "paper")[0], where)
    cfg["methods"]["fedavg_b8"] = {"algorithm": "fedavg", "label": "FedAvg-8", "S": 20, "b": 8}
    cfg["figures"]["fig4"]["curves"].append({"method": "fedavg_b8"})
    runs = resolve_paper(cfg, "paper")[0]
    with pytest.raises(ConfigError, match=r"readings.step_split.alternatives.global_sqrt_S.set.methods sets step_split "
                                          r"on scaffold, scaffold_full, fedavg, fedavg_full but does not name method "
                                          r"'fedavg_b8', whose runs take it too: add it there \(fedavg_b8: \{\}"):
        check_reading_methods(cfg, runs, where)
    alternative = cfg["readings"]["step_split"]["alternatives"]["global_sqrt_S"]["set"]["methods"]
    alternative["fedavg_b8"] = {}
    check_reading_methods(cfg, runs, where)
    alternative["fedavg_b9"] = {}
    with pytest.raises(ConfigError, match="global_sqrt_S.set.methods: fedavg_b9 is not a method of the paper"):
        check_reading_methods(cfg, runs, where)


def test_wrong_type_in_paper_file_is_caught(tmp_path):
    config_dir = _paper_config_dir(tmp_path, lambda c: c["defaults"].update(K="ten"))
    with pytest.raises(ConfigError, match="K: .ten. is not of type .integer."):
        load_and_validate({"scale": "smoke"}, config_dir)


def test_a_reading_states_its_source_and_a_claim_rests_only_on_declared_readings(tmp_path):
    def guessed(cfg):
        cfg["readings"]["favano"]["source"] = "guess"
    with pytest.raises(ConfigError, match="readings.favano.source: 'guess' is not allowed; allowed values: paper, authors_code, cited_work, unreported"):
        load_and_validate({"scale": "smoke"}, _paper_config_dir(tmp_path / "a", guessed, paper="defedavg"))
    with pytest.raises(ConfigError, match="claim C1b: rests_on: unknown reading 'favanno'"):
        load_and_validate({"scale": "smoke"}, _paper_config_dir(
            tmp_path / "b", lambda cfg: _claim(cfg, "C1b").update(rests_on=["favanno"]), folder="claims",
            paper="defedavg"))


def test_every_defedavg_claim_on_favano_rests_on_its_assumed_definition():
    """FAVANO's period and weights are ours (the paper names the algorithm only): each claim that reads a
    FAVANO curve must say so, or its verdict would pass for a finding about the paper."""
    readings = yaml.safe_load((CONFIG / "papers" / "defedavg.yaml").read_text())["readings"]
    assert readings["favano"]["source"] == "assumption"
    claims = yaml.safe_load((CONFIG / "claims" / "defedavg.yaml").read_text())["claims"]
    on_favano = [c for c in claims if "favano" in yaml.safe_dump({k: c.get(k) for k in ("a", "b", "select")})]
    assert on_favano and all("favano" in c.get("rests_on", []) for c in on_favano)


def test_unknown_method_and_panel_name_allowed_values(tmp_path):
    config_dir = _paper_config_dir(tmp_path, lambda c: c["figures"]["fig2a"]["curves"].append({"method": "no_such_method"}))
    with pytest.raises(ConfigError, match="unknown method 'no_such_method'.*allowed: fedavg, fedavg_full, fedpage"):
        load_and_validate({"scale": "smoke"}, config_dir)
    config_dir = _paper_config_dir(tmp_path / "b", lambda c: c["scales"]["quick"]["figures"]["fig4"].update(panels=["N=7"]))
    with pytest.raises(ConfigError, match="unknown panel 'N=7'.*allowed: N=10, M=3250"):
        load_and_validate({"scale": "quick"}, config_dir)


def test_unknown_figure_lists_known_figures():
    _, table = load_and_validate({"scale": "smoke"}, CONFIG)
    with pytest.raises(ConfigError, match="unknown figure 'fig9'.*allowed: fig1a, fig1b, fig2a"):
        table.figure("fedpage", "fig9")


def test_run_id_is_a_stable_hash_of_the_spec_only():
    spec = {"a": 1, "b": [1, 2], "c": "x"}
    assert run_id_of(spec) == run_id_of({"c": "x", "b": [1, 2], "a": 1})
    assert run_id_of(spec) != run_id_of({**spec, "a": 2})
    assert run_id_of(spec) == run_id_of({**spec, "checkpoint_every": 7})  # operational only
    # a setting kept out of the id at its default: writing it out changes no id; another value does
    assert run_id_of(spec) == run_id_of({**spec, "first_seed": 0}) != run_id_of({**spec, "first_seed": 3})


def test_a_numerics_version_enters_the_run_ids_of_its_engine_only_once_it_is_bumped(monkeypatch):
    runs = load_and_validate({"scale": "smoke"}, CONFIG)[1].runs
    version = {name: engine.numerics for name, engine in ENGINES.items()}
    assert {spec["engine"] for spec in runs.values()} == set(ENGINES)  # every engine has runs here
    assert version["async"] == 0 and version["finite_sum"] > 0  # (update the test as versions move)
    # at 0 an id is the digest of the spec alone, as every id made before versions existed; above 0 it is not
    plain = {rid: config_digest({k: v for k, v in spec.items() if k not in OPERATIONAL_KEYS})
             for rid, spec in runs.items()}
    assert all((rid == plain[rid]) == (version[spec["engine"]] == 0) for rid, spec in runs.items())
    # the version that made a run, as run.json records it, gives the id it was made under
    assert all(run_id_of(spec, numerics=0) == plain[rid] for rid, spec in runs.items())
    monkeypatch.setitem(VERSIONS, "async", 1)
    assert ENGINES["async"].numerics == 1
    moved = {rid for rid, spec in runs.items() if run_id_of(spec) != rid}
    assert moved == {rid for rid, spec in runs.items() if spec["engine"] == "async"}


def test_figures_share_identical_runs_and_scales_only_override():
    paper = build_run_table({"papers": ["fedpage"], "scale": "paper"}, CONFIG)
    fig2a = {(c.method, c.grid["eta_tilde"]): c.run_id for c in paper.figure("fedpage", "fig2a").curves}
    fig4 = paper.figure("fedpage", "fig4")
    shared = {(c.method, c.grid["eta_tilde"]): c.run_id for c in fig4.curves if c.panel == "N=3250, M=10"}
    assert shared == fig2a  # Fig 4(a) is Fig 2(a): same runs, computed once
    assert len(fig2a) == 9 and paper.runs[fig2a[("fedpage", 0.1)]]["rounds"] == 3000

    quick = build_run_table({"papers": ["fedpage"], "scale": "quick"}, CONFIG)
    curves = quick.figure("fedpage", "fig2a").curves
    assert {c.grid["eta_tilde"] for c in curves} == {0.1, 0.01}
    assert all(quick.runs[c.run_id]["rounds"] == 1000 for c in curves)
    assert "rounds = 1000 (paper scale: 3000)" in quick.figure("fedpage", "fig2a").deviations


def test_fig1_step_sizes_and_client_settings_follow_the_paper():
    table = build_run_table({"papers": ["fedpage"], "scale": "paper"}, CONFIG)
    got = {(c.panel, c.label): table.runs[c.run_id] for c in table.figure("fedpage", "fig1a").curves}
    spec = got[("N=325, M=100, S=1", "FedPAGE-20")]
    assert (spec["n_clients"], spec["samples_per_client"], spec["S"], spec["K"], spec["eta_tilde"]) == (325, 100, 1, 20, 0.5)


def test_an_unknown_engine_names_the_registered_ones(tmp_path):
    config_dir = _paper_config_dir(tmp_path, lambda cfg: cfg.update(engine="finite_summ"))
    with pytest.raises(ConfigError) as info:
        load_and_validate({}, config_dir)
    assert "'finite_summ' is not allowed" in str(info.value)
    assert all(name in str(info.value) for name in ENGINES)


def test_a_figure_or_claim_can_only_use_an_x_column_its_engine_logs(tmp_path):
    config_dir = _paper_config_dir(tmp_path, lambda cfg: cfg["figures"]["fig2a"].update(
        plot={"kind": "convergence", "x": "virtual_time"}))
    with pytest.raises(ConfigError, match="figures.fig2a.plot: x: 'virtual_time' is not an x column of engine "
                                          "finite_sum; allowed values: round"):
        load_and_validate({}, config_dir)

    def claim_on_time(cfg):
        cfg["claims"][0]["x"] = "virtual_time"

    config_dir = _paper_config_dir(tmp_path / "claims", claim_on_time, folder="claims")
    with pytest.raises(ConfigError, match="claim C1a: x: 'virtual_time' is not an x column"):
        load_and_validate({}, config_dir)


def test_every_plot_kind_lists_exactly_its_builders_options_in_the_schema():
    import inspect

    from fedrepro.plots import KINDS

    defs = yaml.safe_load((Path(__file__).resolve().parents[2] / "workflow/schemas/paper.schema.yaml").read_text())["$defs"]
    for kind, builder in KINDS.items():
        options = {p.name for p in inspect.signature(builder).parameters.values() if p.kind is p.KEYWORD_ONLY}
        assert set(defs[f"{kind}_plot"]["properties"]) == options | {"kind"}, kind


@pytest.mark.parametrize("edit, expected", [
    # the paper's options (every figure of its kind inherits them)
    (lambda c: c["plot"].update(logyy=True), ["fedpage.yaml: plot:", "'logyy' was unexpected", "allowed keys", "logy"]),
    # a figure's own options, merged with the paper's: checked against the kind they add up to
    (lambda c: c["figures"]["fig2a"].update(plot={"ylable": "g"}),
     ["figures.fig2a.plot (kind convergence)", "'ylable' was unexpected", "y, ylabel"]),
    # an option of another kind
    (lambda c: c["figures"]["fig2a"].update(plot={"ncols": 2}), ["figures.fig2a.plot", "'ncols' was unexpected"]),
    # a metric the engine does not log
    (lambda c: c["figures"]["fig2a"].update(plot={"y": "grad"}),
     ["figures.fig2a.plot: y: 'grad' is not a metric of engine finite_sum; allowed values: grad_norm"]),
])
def test_a_misspelt_plot_option_stops_at_start_up(tmp_path, edit, expected):
    with pytest.raises(ConfigError) as info:
        load_and_validate({"scale": "smoke"}, _paper_config_dir(tmp_path, edit))
    assert "\n" not in str(info.value)
    for text in expected:
        assert text in str(info.value)


@pytest.mark.parametrize("paper, edit, expected", [
    # values of the column another parameter names, in the paper's terms (quick runs n = 1..16 of 20 clients)
    ("defedavg", lambda c: _claim(c, "C9a").update(order=[10, 20, 25]), ["claim C9a: order: n 25 is not in figures"]),
    ("defedavg", lambda c: _claim(c, "C4b").update(than=[40, 800]), ["claim C4b: than: n 800 is not in figures"]),
    ("fedcluster", lambda c: _claim(c, "C5a").update(greater="cifar"),
     ["claim C5a: greater: dataset 'cifar' is not in figures", "allowed values: cifar10, mnist"]),
    ("fedvr", lambda c: _claim(c, "C1").update(stats=["mean_err_final", "auc_"]),
     ["claim C1: stats: 'auc_' is not allowed; allowed values: mean_err_final"]),
])
def test_claims_of_every_engine_are_checked_against_their_figures(tmp_path, paper, edit, expected):
    config_dir = _paper_config_dir(tmp_path, edit, folder="claims", paper=paper)
    with pytest.raises(ConfigError) as info:
        load_and_validate({"scale": "smoke"}, config_dir)
    for text in expected:
        assert text in str(info.value)


@pytest.mark.parametrize("paper, edit, scale, expected", [
    ("fedpage", lambda c: c["methods"]["scaffold"].update(S=5000), "paper",
     "S = 5000 exceeds n_clients (3250)"),
    ("fedpage", lambda c: c["panels"]["a9a_robust"].update(samples_per_client=100), "paper",
     "n_clients x samples_per_client = 325000 exceeds the rows of a9a (32561)"),
    ("fedpage", lambda c: c["methods"]["scaffold"].update(b=11), "paper", "b = 11 exceeds samples_per_client (10)"),
    ("fedvr", lambda c: c["defaults"].update(samples_per_agent=100), "smoke",
     "n_agents x samples_per_agent = 1800 exceeds the rows of insurance (1338)"),
    ("fedvr", lambda c: c["methods"]["fedavg_uniform"].update(agents_per_round=19), "smoke",
     "agents_per_round = 19 exceeds n_agents (18)"),
    ("fedcluster", lambda c: c["defaults"].update(samples_per_device=70000), "paper",
     "samples_per_device = 70000 exceeds the rows of "),
    ("defedavg", lambda c: c["panels"]["fmnist_iid"].update(samples_per_client=601), "paper",
     "n_clients x samples_per_client = 60100 exceeds the rows of fashion_mnist (60000)"),
])
def test_settings_that_exceed_the_data_stop_at_start_up(tmp_path, paper, edit, scale, expected):
    """Named with the figure, panel and curve of a run that has them, before any data is fetched
    (the row counts are the registry's)."""
    with pytest.raises(ConfigError) as info:
        load_and_validate({"scale": scale}, _paper_config_dir(tmp_path, edit, paper=paper))
    message = str(info.value)
    assert expected in message and f"config/papers/{paper}.yaml: figures." in message and "\n" not in message


@pytest.mark.parametrize("paper, edit, expected", [
    ("fedvr", lambda c: c["defaults"].update(seeds=1001), "seeds = 1001 exceeds the most seeds of a run (1000)"),
    ("fedpage", lambda c: c["defaults"].update(rounds=20_000_000),
     "rounds = 20000000 exceeds the most steps of a run (10000000)"),
    ("fedpage", lambda c: c["defaults"].update(rounds=9_000_000, eval_every=1),
     "exceeds the most metrics rows a run holds in memory (1000000)"),
])
def test_sizes_beyond_memory_stop_at_start_up_naming_the_limit(tmp_path, paper, edit, expected):
    with pytest.raises(ConfigError) as info:
        load_and_validate({"scale": "paper"}, _paper_config_dir(tmp_path, edit, paper=paper))
    assert expected in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("value, where", [(float("nan"), "defaults.divergence_threshold"),
                                          (float("inf"), "defaults.divergence_threshold"),
                                          (float("-inf"), "defaults.divergence_threshold")])
def test_nan_and_infinity_in_a_paper_file_stop_at_start_up_naming_the_key(tmp_path, value, where):
    config_dir = _paper_config_dir(tmp_path, lambda c: c["defaults"].update(divergence_threshold=value))
    with pytest.raises(ConfigError) as info:
        load_and_validate({"scale": "smoke"}, config_dir)
    assert f"{where}: {value} is not a finite number" in str(info.value)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has CUDA")
def test_device_cuda_without_cuda_names_the_key():
    from fedrepro.validate import check_device

    check_device("cpu"), check_device("auto")
    with pytest.raises(ConfigError, match="device: 'cuda', but torch finds no CUDA device on this machine; "
                                          "allowed here: auto, cpu"):
        check_device("cuda")


def test_a_title_names_only_the_values_of_the_panels_drawn_at_its_scale():
    # Fig. 4 of FedPAGE: quick drops the panel with N = 10 clients, smoke keeps only N = 325
    titles = {scale: build_run_table({"papers": ["fedpage"], "scale": scale}, CONFIG).figure("fedpage", "fig4").title
              for scale in ("smoke", "quick", "paper")}
    assert titles["paper"].endswith("with N = 3250, 325, 10 clients")
    assert titles["quick"].endswith("with N = 3250, 325 clients")
    assert titles["smoke"].endswith("with N = 325 clients")


@pytest.mark.parametrize("title, expected", [("N = {n_clientz}", "title names {n_clientz}, which is not a setting"),
                                             ("N = {n_clients", "title 'N = {n_clients'")])
def test_a_title_naming_an_unknown_setting_stops_at_start_up(tmp_path, title, expected):
    config_dir = _paper_config_dir(tmp_path, lambda c: c["figures"]["fig4"].update(title=title))
    with pytest.raises(ConfigError) as info:
        load_and_validate({"scale": "smoke"}, config_dir)
    assert "figures.fig4" in str(info.value) and expected in str(info.value)


@pytest.mark.parametrize("plot, expected", [
    ({"style_independent": ["cgsd"]}, "plot: style_independent: 'cgsd' is not a method of the paper; allowed values: "
                                      "csgd, fedavg, fedcluster"),
    ({"dashed": ["csdg"]}, "plot: dashed: 'csdg' is not a method of the paper"),
    ({"log_metrics": ["train_los"]}, "plot: log_metrics: 'train_los' is not a metric of engine federated_nn"),
    ({"legend": "outsde"}, "legend: 'outsde' is not allowed; allowed values: inside, outside"),
])
def test_a_loss_accuracy_option_naming_no_method_or_metric_stops_at_start_up(tmp_path, plot, expected):
    config_dir = _paper_config_dir(tmp_path, lambda c: c["figures"]["fig2"]["plot"].update(plot), paper="fedcluster")
    with pytest.raises(ConfigError) as info:
        load_and_validate({"scale": "smoke"}, config_dir)
    assert "figures.fig2" in str(info.value) and expected in str(info.value)


def test_a_scale_note_reaches_the_captions_of_its_figures_only_at_that_scale():
    from fedrepro.experiments.runtable import load_paper_config, resolve_paper

    cfg = load_paper_config(CONFIG / "papers" / "fedcluster.yaml")
    cfg["scales"]["quick"] = {**(cfg["scales"]["quick"] or {}), "note": "every figure: a conv net",
                              "figures": {"fig6": {"note": "fig6 only: rho_cluster is slight"}}}
    _, quick = resolve_paper(cfg, "quick")
    _, paper = resolve_paper(cfg, "paper")
    assert "every figure: a conv net" in quick[("fedcluster", "fig2")].deviations
    assert "fig6 only: rho_cluster is slight" not in quick[("fedcluster", "fig2")].deviations
    assert quick[("fedcluster", "fig6")].deviations[-2:] == ["every figure: a conv net", "fig6 only: rho_cluster is slight"]
    assert not any("conv net" in d for f in paper.values() for d in f.deviations)


def test_a_caption_lists_a_setting_as_run_only_for_the_curves_whose_runs_have_it():
    from fedrepro.experiments.runtable import load_paper_config, resolve_paper

    cfg = load_paper_config(Path("config/papers/fedpage.yaml"))
    for scale in ("smoke", "quick"):
        runs, figures = resolve_paper(cfg, scale)
        figure = figures[("fedpage", "fig5")]  # FedPAGE, FedPAGE-Full, SCAFFOLD-Full, FedAvg-Full
        by_label: dict[str, list] = {}
        for curve in figure.curves:
            if "c_l" in runs[curve.run_id] and runs[curve.run_id]["c_l"] not in by_label.setdefault(curve.label, []):
                by_label[curve.label].append(runs[curve.run_id]["c_l"])
        assert set(by_label) == {"FedPAGE", "FedPAGE-Full"}  # SCAFFOLD and FedAvg have no c_l: not listed
        shown = "; ".join(f"{label} " + ", ".join(f"{v:g}" for v in values) for label, values in by_label.items())
        assert figure.caption.endswith(f"c_l as run: {shown}.")
        assert "SCAFFOLD-Full None" not in figure.caption


def test_a_per_scale_setting_on_the_command_line_in_each_documented_form():
    """config/README.md: `--config 'max_seeds={quick: 12}'` (Snakemake reads a nested value's leaves as strings: '12'
    was refused as not an integer), the flat `max_seeds_quick=12`, and `fedrepro seed-plan --config` as Make passes
    CONFIG to it; each gives config.yaml's typed values, the other scales kept."""
    from snakemake.cli import parse_config

    from fedrepro.cli import config_entry

    expected = {"smoke": 4, "quick": 12, "paper": 10}
    for given in (["max_seeds={quick: 12}"], ["max_seeds_quick=12"]):
        assert with_defaults(parse_config(given))["max_seeds"] == expected, given  # as snakemake --config reads it
        assert with_defaults(dict(map(config_entry, given)))["max_seeds"] == expected, given  # fedrepro seed-plan
    both = with_defaults(parse_config(["max_seeds={smoke: 5}", "max_seeds_quick=12", "seed_budget_minutes_quick=90"]))
    assert both["max_seeds"] == {"smoke": 5, "quick": 12, "paper": 10} and both["seed_budget_minutes"]["quick"] == 90
    with pytest.raises(ConfigError, match="max_seeds.quick: 'x' is not of type 'integer'"):
        with_defaults(parse_config(["max_seeds_quick=x"]))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_runs_first_seed_and_threads_are_bounded(engine, capsys):
    """Issue 62: first_seed had no upper bound in any run schema, and `fedrepro run --threads` took 0 or -1 (a
    traceback from torch); each is refused in one line now."""
    from fedrepro.cli import parser
    from fedrepro.schemas import check

    runs = load_and_validate({"scale": "smoke"}, CONFIG)[1].runs
    spec = next(s for s in runs.values() if s["engine"] == engine)
    schema_name = f"{engine}_run.schema.yaml"
    check({**spec, "first_seed": 10 ** 9}, schema_name, "spec")
    for bad in (-1, 10 ** 9 + 1):
        with pytest.raises(ConfigError, match="first_seed"):
            check({**spec, "first_seed": bad}, schema_name, "spec")
    with pytest.raises(SystemExit):
        parser().parse_args(["run", "fedvr", "fig3", "--threads", "0"])
    assert "is not a whole number >= 1" in capsys.readouterr().err
