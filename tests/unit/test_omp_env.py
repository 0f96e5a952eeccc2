"""OpenMP's settings, set apart for the judge and the runners (agentkern/harness/omp_env.py)."""

from agentkern.harness.omp_env import USER_OMP_WAIT_POLICY, judge_thread_env, runner_thread_env


def test_the_judges_threads_never_spin_and_the_runners_get_libgomps_default_back():
    judge = judge_thread_env({"PATH": "/bin"})
    assert judge["OMP_WAIT_POLICY"] == "PASSIVE"
    runner = runner_thread_env(judge)
    assert "OMP_WAIT_POLICY" not in runner  # libgomp's own default: spin, then sleep
    assert runner["OMP_PROC_BIND"] == "true"
    assert runner["PATH"] == "/bin"


def test_the_users_own_settings_reach_the_runners():
    user = {"OMP_WAIT_POLICY": "ACTIVE", "OMP_PROC_BIND": "false"}
    judge = judge_thread_env(user)
    assert judge["OMP_WAIT_POLICY"] == "PASSIVE" and judge[USER_OMP_WAIT_POLICY] == "ACTIVE"
    runner = runner_thread_env(judge)
    assert runner["OMP_WAIT_POLICY"] == "ACTIVE"
    assert runner["OMP_PROC_BIND"] == "false"
    assert USER_OMP_WAIT_POLICY not in runner


def test_a_judge_env_made_twice_keeps_the_users_value():
    twice = judge_thread_env(judge_thread_env({"OMP_WAIT_POLICY": "ACTIVE"}))
    assert runner_thread_env(twice)["OMP_WAIT_POLICY"] == "ACTIVE"
