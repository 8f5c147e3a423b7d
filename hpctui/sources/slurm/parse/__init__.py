"""Pure Slurm parsers: CLI text / REST JSON / pyslurm objects → hpctui.model.

No I/O here: backends (cli.py, rest.py, ...) fetch bytes and call these. Every parser
raises :class:`SlurmParseError` (a ValueError) with a one-line message on bad input.
"""

from hpctui.model.pending_reasons import explain_pending_reason
from hpctui.sources.slurm.parse.diag import parse_diag_json, parse_sdiag_text
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.exitcode import decode_exit_code, decode_exit_pair
from hpctui.sources.slurm.parse.gres import parse_gres, parse_gres_used
from hpctui.sources.slurm.parse.jobs import LIVE_JOB_STATES, job_display_state, parse_jobs_json
from hpctui.sources.slurm.parse.nodes import fill_partitions, parse_nodes_json, parse_partitions_json
from hpctui.sources.slurm.parse.pyslurm_map import job_from_pyslurm, node_from_pyslurm
from hpctui.sources.slurm.parse.rest_versions import (
    PARSEABLE_REST_VERSIONS,
    SUPPORTED_REST_VERSIONS,
    detect_rest_version,
    parse_rest_errors,
    pick_rest_version,
)
from hpctui.sources.slurm.parse.scontrol import parse_scontrol_jobs, parse_scontrol_nodes
from hpctui.sources.slurm.parse.sshare import (
    Association,
    FairShare,
    QosLimits,
    parse_sacctmgr_assoc_text,
    parse_sacctmgr_qos_text,
    parse_sshare_text,
)
from hpctui.sources.slurm.parse.states import normalize_node_state
from hpctui.sources.slurm.parse.text import (
    SEP,
    SINFO_FORMAT,
    SQUEUE_FORMAT,
    parse_sinfo_text,
    parse_squeue_text,
)

__all__ = [
    "LIVE_JOB_STATES", "PARSEABLE_REST_VERSIONS", "SEP", "SINFO_FORMAT", "SQUEUE_FORMAT",
    "SUPPORTED_REST_VERSIONS", "Association", "FairShare", "QosLimits", "SlurmParseError", "decode_exit_code",
    "decode_exit_pair", "detect_rest_version", "explain_pending_reason", "fill_partitions",
    "job_display_state", "job_from_pyslurm", "node_from_pyslurm", "normalize_node_state",
    "parse_diag_json", "parse_gres", "parse_gres_used", "parse_jobs_json", "parse_nodes_json",
    "parse_partitions_json", "parse_rest_errors", "parse_sacctmgr_assoc_text", "parse_sacctmgr_qos_text", "parse_scontrol_jobs",
    "parse_scontrol_nodes", "parse_sdiag_text", "parse_sinfo_text", "parse_squeue_text",
    "parse_sshare_text", "pick_rest_version",
]
