/*
 * Kepler's metric families, which -f prometheus writes, and the label sets
 * they share.
 */
#include "prom.h"

/*
 * Label sets, shared by the families that have them; every series also has
 * node_name where the stream names its node.  A name that starts with '='
 * is one of Kepler's labels that no record field holds as it is, made
 * from the record (label_mapped).
 */
static const char *const no_labels[] = { NULL };
static const char *const zone_labels[] = { "zone", "?socket", NULL };
static const char *const node_labels[] = {
	"zone", "=path", "?socket", NULL
};
static const char *const source_labels[] = { "source", "?socket", NULL };
static const char *const process_labels[] = {
	"pid", "comm", "exe", "=type", "zone", "state", "container_id",
	"pod_id", "vm_id", "?socket", NULL
};
static const char *const process_cpu_labels[] = {
	"pid", "comm", "exe", "=type", "container_id", "pod_id", "vm_id", NULL
};
static const char *const container_labels[] = {
	"container_id", "container_name", "=runtime", "pod_id", "zone",
	"?state", NULL
};
static const char *const container_cpu_labels[] = {
	"container_id", "container_name", "=runtime", "pod_id", NULL
};
static const char *const pod_labels[] = {
	"pod_id", "pod_name", "pod_namespace", "zone", "?state", NULL
};
static const char *const vm_labels[] = {
	"vm_id", "vm_name", "=hypervisor", "zone", "?state", NULL
};
static const char *const unit_labels[] = { "unit", "zone", "?state", NULL };
static const char *const group_labels[] = {
	"by", "group", "zone", "?state", NULL
};
static const char *const host_labels[] = { "level", "zone", NULL };
/*
 * The whole machine: at the wall, the platform zone of a meter or a model,
 * or RAPL's psys; the source label tells them apart.
 */
static const char *const platform_zones[] = { "platform", "psys", NULL };
/* Kepler's platform gauge is the machine at the wall only: never psys. */
static const char *const wall_zones[] = { "platform", NULL };
/*
 * A GPU's records (zone gpu, kp-attribute(1), GPU zones) are in the GPU
 * families alone, each device its own series: Kepler's labels gpu and
 * gpu_uuid hold the record's device and uuid (label_mapped).  The CPU
 * families, whose zones are NULL, never take them.
 */
static const char *const gpu_zones[] = { "gpu", NULL };
static const char *const gpu_node_labels[] = {
	"=gpu", "=gpu_uuid", "source", NULL
};
static const char *const gpu_process_labels[] = {
	"pid", "comm", "exe", "=type", "state", "container_id", "pod_id",
	"vm_id", "=gpu", "=gpu_uuid", NULL
};
static const char *const gpu_container_labels[] = {
	"container_id", "container_name", "=runtime", "pod_id", "?state",
	"=gpu", "=gpu_uuid", NULL
};
static const char *const gpu_pod_labels[] = {
	"pod_id", "pod_name", "pod_namespace", "?state", "=gpu", "=gpu_uuid",
	NULL
};
static const char *const gpu_vm_labels[] = {
	"vm_id", "vm_name", "=hypervisor", "?state", "=gpu", "=gpu_uuid", NULL
};
static const char *const gpu_unit_labels[] = {
	"unit", "?state", "=gpu", "=gpu_uuid", NULL
};
static const char *const gpu_group_labels[] = {
	"by", "group", "?state", "=gpu", "=gpu_uuid", NULL
};
static const char *const gpu_host_labels[] = {
	"level", "=gpu", "=gpu_uuid", NULL
};
static const char *const gpu_labels[] = { "=gpu", "=gpu_uuid", NULL };
/*
 * Exited records fold by parent and comm; their series fold further, by
 * comm and the group they ran in, without pid or ppid: a build's many
 * short processes make a few series per container, pod, VM or unit.
 */
static const char *const exited_labels[] = {
	"comm", "=type", "container_id", "pod_id", "vm_id", "unit", "zone",
	"?socket", NULL
};

const struct family families[NFAMILIES] = {
	{ "kepler_node_cpu_joules_total", "node", "energy", NULL,
	    "total_uj", "energy_uj", COUNTER_J, node_labels,
	    "Energy used by the CPU zone of the node, in joules" },
	{ "kepler_node_cpu_active_joules_total", "node", NULL, NULL,
	    "active_total_uj", "active_uj", COUNTER_J, node_labels,
	    "Energy used by the CPU zone of the node while active, in "
	    "joules" },
	{ "kepler_node_cpu_idle_joules_total", "node", NULL, NULL,
	    "idle_total_uj", "idle_uj", COUNTER_J, node_labels,
	    "Energy used by the CPU zone of the node while idle, in joules" },
	{ "kepler_node_cpu_watts", "node", "energy", NULL,
	    "watts", NULL, GAUGE, node_labels,
	    "Power of the CPU zone of the node, in watts" },
	{ "kepler_node_cpu_active_watts", "node", NULL, NULL,
	    "active_watts", NULL, GAUGE, node_labels,
	    "Power of the CPU zone of the node while active, in watts" },
	{ "kepler_node_cpu_idle_watts", "node", NULL, NULL,
	    "idle_watts", NULL, GAUGE, node_labels,
	    "Power of the CPU zone of the node while idle, in watts" },
	{ "kp_node_cpu_idle_kept_joules_total", "node", NULL, NULL,
	    NULL, "idle_kept_uj", COUNTER_J, zone_labels,
	    "Idle energy of the CPU zone of the node that is not shared out "
	    "to the processes, in joules" },
	{ "kepler_node_cpu_usage_ratio", "node", NULL, NULL,
	    "usage_ratio", NULL, GAUGE, no_labels,
	    "Active CPU time of the node over all CPU time" },
	{ "kp_node_platform_joules_total", "node", "energy", platform_zones,
	    "total_uj", "energy_uj", COUNTER_J, source_labels,
	    "Energy used by the whole platform (the platform zone, at the "
	    "wall, or RAPL's psys zone), in joules" },
	{ "kp_node_platform_watts", "node", "energy", platform_zones,
	    "watts", NULL, GAUGE, source_labels,
	    "Power of the whole platform (the platform zone, at the wall, or "
	    "RAPL's psys zone), in watts" },
	{ "kepler_platform_watts", "node", "energy", wall_zones,
	    "watts", NULL, GAUGE, source_labels,
	    "Power of the whole machine at the wall (the platform zone), in "
	    "watts" },
	{ "kepler_process_cpu_joules_total", "process", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, process_labels,
	    "Energy attributed to the process, in joules" },
	{ "kepler_process_cpu_watts", "process", NULL, NULL,
	    "watts", NULL, GAUGE, process_labels,
	    "Power attributed to the process, in watts" },
	{ "kepler_process_cpu_seconds_total", "process", NULL, NULL,
	    NULL, "cpu_us", COUNTER_S, process_cpu_labels,
	    "CPU time of the process, user and system, in seconds, since "
	    "kp-fmt first saw it" },
	{ "kepler_container_cpu_joules_total", "container", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, container_labels,
	    "Energy attributed to the container, in joules" },
	{ "kepler_container_cpu_watts", "container", NULL, NULL,
	    "watts", NULL, GAUGE, container_labels,
	    "Power attributed to the container, in watts" },
	{ "kepler_container_cpu_seconds_total", "container", NULL, NULL,
	    NULL, "cpu_us", COUNTER_S, container_cpu_labels,
	    "CPU time of the container's processes, user and system, in "
	    "seconds, since kp-fmt first saw it" },
	{ "kepler_pod_cpu_joules_total", "pod", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, pod_labels,
	    "Energy attributed to the pod, in joules" },
	{ "kepler_pod_cpu_watts", "pod", NULL, NULL,
	    "watts", NULL, GAUGE, pod_labels,
	    "Power attributed to the pod, in watts" },
	{ "kepler_vm_cpu_joules_total", "vm", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, vm_labels,
	    "Energy attributed to the virtual machine, in joules" },
	{ "kepler_vm_cpu_watts", "vm", NULL, NULL,
	    "watts", NULL, GAUGE, vm_labels,
	    "Power attributed to the virtual machine, in watts" },
	{ "kp_unit_cpu_joules_total", "unit", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, unit_labels,
	    "Energy attributed to the systemd unit, in joules" },
	{ "kp_unit_cpu_watts", "unit", NULL, NULL,
	    "watts", NULL, GAUGE, unit_labels,
	    "Power attributed to the systemd unit, in watts" },
	{ "kp_group_cpu_joules_total", "group", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, group_labels,
	    "Energy attributed to the processes grouped by one field, in "
	    "joules" },
	{ "kp_group_cpu_watts", "group", NULL, NULL,
	    "watts", NULL, GAUGE, group_labels,
	    "Power attributed to the processes grouped by one field, in "
	    "watts" },
	{ "kp_host_cpu_joules_total", "host", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, host_labels,
	    "Energy attributed to the processes in no group of the level, "
	    "in joules" },
	{ "kp_host_cpu_watts", "host", NULL, NULL,
	    "watts", NULL, GAUGE, host_labels,
	    "Power attributed to the processes in no group of the level, in "
	    "watts" },
	{ "kp_unattributed_cpu_joules_total", "unattributed", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, zone_labels,
	    "Active energy no process accounts for, in joules" },
	{ "kp_unattributed_cpu_watts", "unattributed", NULL, NULL,
	    "watts", NULL, GAUGE, zone_labels,
	    "Active power no process accounts for, in watts" },
	/* Only with --carbon-intensity. */
	{ "kp_node_cpu_co2_grams_total", "node", "energy", NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, zone_labels,
	    "Emissions of the CPU zone of the node, in grams of CO2 "
	    "equivalent" },
	{ "kp_process_cpu_co2_grams_total", "process", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, process_labels,
	    "Emissions attributed to the process, in grams of CO2 "
	    "equivalent" },
	{ "kp_container_cpu_co2_grams_total", "container", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, container_labels,
	    "Emissions attributed to the container, in grams of CO2 "
	    "equivalent" },
	{ "kp_pod_cpu_co2_grams_total", "pod", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, pod_labels,
	    "Emissions attributed to the pod, in grams of CO2 equivalent" },
	{ "kp_vm_cpu_co2_grams_total", "vm", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, vm_labels,
	    "Emissions attributed to the virtual machine, in grams of CO2 "
	    "equivalent" },
	{ "kp_unit_cpu_co2_grams_total", "unit", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, unit_labels,
	    "Emissions attributed to the systemd unit, in grams of CO2 "
	    "equivalent" },
	{ "kp_group_cpu_co2_grams_total", "group", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, group_labels,
	    "Emissions attributed to the processes grouped by one field, in "
	    "grams of CO2 equivalent" },
	{ "kp_host_cpu_co2_grams_total", "host", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, host_labels,
	    "Emissions attributed to the processes in no group of the "
	    "level, in grams of CO2 equivalent" },
	{ "kp_unattributed_cpu_co2_grams_total", "unattributed", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, zone_labels,
	    "Emissions of the active energy no process accounts for, in "
	    "grams of CO2 equivalent" },
	/* Each GPU: Kepler's families where Kepler has them, else kp_. */
	{ "kepler_node_gpu_joules_total", "node", "energy", gpu_zones,
	    "total_uj", "energy_uj", COUNTER_J, gpu_node_labels,
	    "Energy used by the GPU, in joules" },
	{ "kepler_node_gpu_watts", "node", "energy", gpu_zones,
	    "watts", NULL, GAUGE, gpu_node_labels,
	    "Power of the GPU, in watts" },
	{ "kepler_node_gpu_idle_watts", "node", NULL, gpu_zones,
	    "idle_watts", NULL, GAUGE, gpu_node_labels,
	    "Power of the GPU while idle: the share of the interval it was "
	    "not busy, in watts" },
	{ "kp_node_gpu_active_joules_total", "node", NULL, gpu_zones,
	    "active_total_uj", "active_uj", COUNTER_J, gpu_node_labels,
	    "Energy used by the GPU while busy, in joules" },
	{ "kp_node_gpu_idle_joules_total", "node", NULL, gpu_zones,
	    "idle_total_uj", "idle_uj", COUNTER_J, gpu_node_labels,
	    "Energy used by the GPU while idle, in joules" },
	{ "kepler_process_gpu_joules_total", "process", NULL, gpu_zones,
	    "total_uj", "energy_uj", COUNTER_J, gpu_process_labels,
	    "Energy of the GPU attributed to the process by its GPU time, in "
	    "joules" },
	{ "kepler_process_gpu_watts", "process", NULL, gpu_zones,
	    "watts", NULL, GAUGE, gpu_process_labels,
	    "Power of the GPU attributed to the process, in watts" },
	{ "kepler_container_gpu_joules_total", "container", NULL, gpu_zones,
	    "total_uj", "energy_uj", COUNTER_J, gpu_container_labels,
	    "Energy of the GPU attributed to the container, in joules" },
	{ "kepler_container_gpu_watts", "container", NULL, gpu_zones,
	    "watts", NULL, GAUGE, gpu_container_labels,
	    "Power of the GPU attributed to the container, in watts" },
	{ "kepler_pod_gpu_joules_total", "pod", NULL, gpu_zones,
	    "total_uj", "energy_uj", COUNTER_J, gpu_pod_labels,
	    "Energy of the GPU attributed to the pod, in joules" },
	{ "kepler_pod_gpu_watts", "pod", NULL, gpu_zones,
	    "watts", NULL, GAUGE, gpu_pod_labels,
	    "Power of the GPU attributed to the pod, in watts" },
	{ "kp_vm_gpu_joules_total", "vm", NULL, gpu_zones,
	    "total_uj", "energy_uj", COUNTER_J, gpu_vm_labels,
	    "Energy of the GPU attributed to the virtual machine, in joules" },
	{ "kp_vm_gpu_watts", "vm", NULL, gpu_zones,
	    "watts", NULL, GAUGE, gpu_vm_labels,
	    "Power of the GPU attributed to the virtual machine, in watts" },
	{ "kp_unit_gpu_joules_total", "unit", NULL, gpu_zones,
	    "total_uj", "energy_uj", COUNTER_J, gpu_unit_labels,
	    "Energy of the GPU attributed to the systemd unit, in joules" },
	{ "kp_group_gpu_joules_total", "group", NULL, gpu_zones,
	    "total_uj", "energy_uj", COUNTER_J, gpu_group_labels,
	    "Energy of the GPU attributed to the processes grouped by one "
	    "field, in joules" },
	{ "kp_host_gpu_joules_total", "host", NULL, gpu_zones,
	    "total_uj", "energy_uj", COUNTER_J, gpu_host_labels,
	    "Energy of the GPU attributed to the processes in no group of the "
	    "level, in joules" },
	{ "kp_unattributed_gpu_joules_total", "unattributed", NULL, gpu_zones,
	    "total_uj", "energy_uj", COUNTER_J, gpu_labels,
	    "Energy of the GPU while busy that no process accounts for, in "
	    "joules" },
};

/*
 * Exited records (kp-records(5), Record type exited) fold processes born
 * and ended inside an interval, by parent and comm, and have no pid: they
 * are no process series.  Their energy is summed per comm, group and
 * zone (exited_labels), so that process, exited, unattributed and idle
 * kept series still add up to the node's.
 */
const struct family exited_families[NEXITED_FAMILIES] = {
	{ "kp_exited_cpu_joules_total", "exited", NULL, NULL,
	    NULL, "energy_uj", COUNTER_J, exited_labels,
	    "Energy attributed to processes born and ended inside an "
	    "interval, in joules" },
	{ "kp_exited_cpu_watts", "exited", NULL, NULL,
	    "watts", NULL, GAUGE, exited_labels,
	    "Power attributed to processes born and ended inside an "
	    "interval, in watts" },
	{ "kp_exited_cpu_co2_grams_total", "exited", NULL, NULL,
	    NULL, "energy_uj", COUNTER_CO2, exited_labels,
	    "Emissions attributed to processes born and ended inside an "
	    "interval, in grams of CO2 equivalent" },
};

/* The record types of workloads, which end; zones and levels stay. */
const char *const workload_types[] = {
	"process", "container", "pod", "vm", "unit", "group", NULL
};

_Static_assert(sizeof(families) / sizeof(families[0]) == NFAMILIES &&
    sizeof(exited_families) / sizeof(exited_families[0]) ==
    NEXITED_FAMILIES, "prom.h counts the families");
