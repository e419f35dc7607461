/*
 * test_podcgroup.c - pod UID and container ID from /proc/PID/cgroup
 * text, in every form the kubelet and the runtimes write (samples shaped
 * like what kubelet 1.30-1.35 with containerd 1.7/2.0, CRI-O 1.30 and
 * cri-dockerd produce on cgroup v1, v2 and hybrid hosts).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gs/podcgroup.h"

#define UID     "0b7f3e4a-91c2-4d5e-8f60-1a2b3c4d5e6f"
#define UID_SD  "0b7f3e4a_91c2_4d5e_8f60_1a2b3c4d5e6f"
#define STATIC  "6f1d3c2b9a8e7d6c5b4a39281706f5e4"
#define CID     "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
#define CID_UP  "3F4E5D6C7B8A99887766554433221100FFEEDDCCBBAA00112233445566778899"

static gs_err parse(const char *text, struct gs_podcgroup *pc,
                    struct gs_errbuf *eb)
{
	return gs_podcgroup_parse(text, strlen(text), pc, eb);
}

static void every_driver_and_runtime_form_names_pod_and_container(void **s)
{
	static const struct {
		const char *what, *text;
		const char *uid, *cid;
		enum gs_pod_runtime rt;
		enum gs_pod_qos qos;
		int version;
	} rows[] = {
	    {"v2 systemd containerd burstable",
	     "0::/kubepods.slice/kubepods-burstable.slice/"
	     "kubepods-burstable-pod" UID_SD ".slice/cri-containerd-" CID
	     ".scope\n",
	     UID, CID, GS_POD_RUNTIME_CONTAINERD, GS_POD_QOS_BURSTABLE, 2},
	    {"v2 systemd containerd guaranteed",
	     "0::/kubepods.slice/kubepods-pod" UID_SD
	     ".slice/cri-containerd-" CID ".scope\n",
	     UID, CID, GS_POD_RUNTIME_CONTAINERD, GS_POD_QOS_GUARANTEED, 2},
	    {"v2 systemd cri-o besteffort",
	     "0::/kubepods.slice/kubepods-besteffort.slice/"
	     "kubepods-besteffort-pod" UID_SD ".slice/crio-" CID ".scope\n",
	     UID, CID, GS_POD_RUNTIME_CRIO, GS_POD_QOS_BESTEFFORT, 2},
	    {"v2 systemd cri-dockerd",
	     "0::/kubepods.slice/kubepods-burstable.slice/"
	     "kubepods-burstable-pod" UID_SD ".slice/docker-" CID ".scope\n",
	     UID, CID, GS_POD_RUNTIME_DOCKER, GS_POD_QOS_BURSTABLE, 2},
	    {"v2 cgroupfs containerd burstable",
	     "0::/kubepods/burstable/pod" UID "/" CID "\n", UID, CID,
	     GS_POD_RUNTIME_UNKNOWN, GS_POD_QOS_BURSTABLE, 2},
	    {"v2 cgroupfs guaranteed",
	     "0::/kubepods/pod" UID "/" CID "\n", UID, CID,
	     GS_POD_RUNTIME_UNKNOWN, GS_POD_QOS_GUARANTEED, 2},
	    {"v2 cgroupfs cri-o",
	     "0::/kubepods/besteffort/pod" UID "/crio-" CID "\n", UID, CID,
	     GS_POD_RUNTIME_CRIO, GS_POD_QOS_BESTEFFORT, 2},
	    {"kind: under kubelet.slice, systemd in a container",
	     "0::/kubelet.slice/kubelet-kubepods.slice/"
	     "kubelet-kubepods-burstable.slice/"
	     "kubelet-kubepods-burstable-pod" UID_SD
	     ".slice/cri-containerd-" CID ".scope\n",
	     UID, CID, GS_POD_RUNTIME_CONTAINERD, GS_POD_QOS_BURSTABLE, 2},
	    {"a process in a child cgroup of its container",
	     "0::/kubepods.slice/kubepods-pod" UID_SD
	     ".slice/cri-containerd-" CID ".scope/init.scope\n",
	     UID, CID, GS_POD_RUNTIME_CONTAINERD, GS_POD_QOS_GUARANTEED, 2},
	    {"static pod: its UID is a 32-digit hash",
	     "0::/kubepods.slice/kubepods-burstable.slice/"
	     "kubepods-burstable-pod" STATIC ".slice/cri-containerd-" CID
	     ".scope\n",
	     STATIC, CID, GS_POD_RUNTIME_CONTAINERD, GS_POD_QOS_BURSTABLE, 2},
	    {"upper-case digits are lowered",
	     "0::/kubepods/pod" UID "/" CID_UP "\n", UID, CID,
	     GS_POD_RUNTIME_UNKNOWN, GS_POD_QOS_GUARANTEED, 2},
	    {"cri-o's conmon: the pod's, no container",
	     "0::/kubepods.slice/kubepods-burstable.slice/"
	     "kubepods-burstable-pod" UID_SD ".slice/crio-conmon-" CID
	     ".scope\n",
	     UID, "", GS_POD_RUNTIME_UNKNOWN, GS_POD_QOS_BURSTABLE, 2},
	    {"the pod's own cgroup",
	     "0::/kubepods/burstable/pod" UID "\n", UID, "",
	     GS_POD_RUNTIME_UNKNOWN, GS_POD_QOS_BURSTABLE, 2},
	    {"v1 cgroupfs, every hierarchy",
	     "12:pids:/kubepods/burstable/pod" UID "/" CID "\n"
	     "11:memory:/kubepods/burstable/pod" UID "/" CID "\n"
	     "10:cpu,cpuacct:/kubepods/burstable/pod" UID "/" CID "\n"
	     "4:devices:/kubepods/burstable/pod" UID "/" CID "\n"
	     "1:name=systemd:/kubepods/burstable/pod" UID "/" CID "\n",
	     UID, CID, GS_POD_RUNTIME_UNKNOWN, GS_POD_QOS_BURSTABLE, 1},
	    {"v1 systemd, some hierarchies at the root",
	     "13:rdma:/\n"
	     "12:memory:/kubepods.slice/kubepods-burstable.slice/"
	     "kubepods-burstable-pod" UID_SD ".slice/cri-containerd-" CID
	     ".scope\n"
	     "3:net_cls,net_prio:/\n"
	     "1:name=systemd:/kubepods.slice/kubepods-burstable.slice/"
	     "kubepods-burstable-pod" UID_SD ".slice/cri-containerd-" CID
	     ".scope\n",
	     UID, CID, GS_POD_RUNTIME_CONTAINERD, GS_POD_QOS_BURSTABLE, 1},
	    {"hybrid: the v2 line wins",
	     "5:memory:/kubepods.slice/kubepods-pod" UID_SD
	     ".slice/crio-" CID ".scope\n"
	     "0::/kubepods.slice/kubepods-pod" UID_SD ".slice/crio-" CID
	     ".scope\n",
	     UID, CID, GS_POD_RUNTIME_CRIO, GS_POD_QOS_GUARANTEED, 2},
	    {"no trailing newline",
	     "0::/kubepods/pod" UID "/" CID, UID, CID,
	     GS_POD_RUNTIME_UNKNOWN, GS_POD_QOS_GUARANTEED, 2},
	};

	(void)s;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_podcgroup pc;
		struct gs_errbuf eb = {0};

		print_message("%s\n", rows[i].what);
		assert_int_equal(parse(rows[i].text, &pc, &eb), GS_OK);
		assert_string_equal(pc.pod_uid, rows[i].uid);
		assert_string_equal(pc.container_id, rows[i].cid);
		assert_int_equal(pc.runtime, rows[i].rt);
		assert_int_equal(pc.qos, rows[i].qos);
		assert_int_equal(pc.cgroup_version, rows[i].version);
	}
}

static void processes_of_no_pod_are_not_found(void **s)
{
	static const char *const texts[] = {
	    "0::/user.slice/user-1000.slice/session-3.scope\n",
	    "0::/system.slice/containerd.service\n",
	    "0::/\n",
	    /* in a QOS class's cgroup, in no pod */
	    "0::/kubepods.slice/kubepods-burstable.slice\n",
	    "0::/kubepods/besteffort\n",
	    /* a docker container outside Kubernetes */
	    "0::/system.slice/docker-" CID ".scope\n",
	    "12:memory:/user.slice\n1:name=systemd:/user.slice/x.scope\n",
	    "",
	};

	(void)s;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct gs_podcgroup pc;

		print_message("%s", texts[i]);
		assert_int_equal(parse(texts[i], &pc, NULL), GS_ERR_NOT_FOUND);
		assert_string_equal(pc.pod_uid, "");
	}
}

static void malformed_pod_cgroups_are_refused_with_the_reason(void **s)
{
	static const struct {
		const char *text, *msg;
	} rows[] = {
	    {"0::/kubepods/burstable/pod" UID "/not-a-container\n",
	     "cgroup of pod " UID ": container part 'not-a-container' is "
	     "none of cri-containerd-<id>.scope, crio-<id>[.scope], "
	     "docker-<id>.scope or <id> (64 hex digits)"},
	    {"0::/kubepods/burstable/podnot-a-uid/" CID "\n",
	     "cgroup '/kubepods/burstable/podnot-a-uid/" CID
	     "': 'podnot-a-uid' is not pod<UID>"},
	    {"0::/kubepods/pod" UID "/" "3f4e\n",
	     "cgroup of pod " UID ": container part '3f4e' is none of "
	     "cri-containerd-<id>.scope, crio-<id>[.scope], "
	     "docker-<id>.scope or <id> (64 hex digits)"},
	    {"garbage\n", "cgroup line 1 is not ID:CONTROLLERS:PATH"},
	};

	(void)s;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_podcgroup pc;
		struct gs_errbuf eb = {0};

		assert_int_equal(parse(rows[i].text, &pc, &eb), GS_ERR_PARSE);
		assert_string_equal(eb.msg, rows[i].msg);
	}
}

static void v1_hierarchies_naming_different_pods_are_refused(void **s)
{
	struct gs_podcgroup pc;
	struct gs_errbuf eb = {0};
	const char *text =
	    "11:memory:/kubepods/pod" UID "/" CID "\n"
	    "1:name=systemd:/kubepods/pod" STATIC "/" CID "\n";

	(void)s;
	assert_int_equal(parse(text, &pc, &eb), GS_ERR_PARSE);
	assert_non_null(strstr(eb.msg, "cgroup v1 hierarchies disagree"));
	assert_non_null(strstr(eb.msg, "line 2 names pod " STATIC));
}

static void names_of_runtimes_and_qos_classes(void **s)
{
	(void)s;
	assert_string_equal(gs_pod_runtime_name(GS_POD_RUNTIME_CRIO), "cri-o");
	assert_string_equal(gs_pod_runtime_name(GS_POD_RUNTIME_CONTAINERD),
	                    "containerd");
	assert_string_equal(gs_pod_qos_name(GS_POD_QOS_BESTEFFORT),
	                    "BestEffort");
}

static void a_consumers_file_lists_every_pod_of_a_claim(void **s)
{
	const char *ok = GS_K8S_PODS_MAGIC "\n"
	                 "4f1c2a9e-0000-4000-8000-0000000000a1\n"
	                 "4F1C2A9E-0000-4000-8000-0000000000A2\n";
	struct gs_errbuf eb = {0};
	char big[64 * 1100];
	size_t off;
	int n = -1;

	(void)s;
	assert_int_equal(gs_podset_check(ok, strlen(ok), &n, &eb), GS_OK);
	assert_int_equal(n, 2);
	assert_true(gs_podset_has(ok, strlen(ok),
	                          "4f1c2a9e-0000-4000-8000-0000000000a1"));
	/* Without case, as the API server and the cgroup may differ. */
	assert_true(gs_podset_has(ok, strlen(ok),
	                          "4f1c2a9e-0000-4000-8000-0000000000a2"));
	assert_false(gs_podset_has(ok, strlen(ok),
	                           "4f1c2a9e-0000-4000-8000-0000000000a"));
	assert_false(gs_podset_has(ok, strlen(ok), GS_K8S_PODS_MAGIC));
	/* No length cap of a label's value: more than 6 pods. */
	off = (size_t)snprintf(big, sizeof(big), "%s\n", GS_K8S_PODS_MAGIC);
	for (int i = 0; i < GS_K8S_PODS_MAX; i++)
		off += (size_t)snprintf(big + off, sizeof(big) - off,
		                        "00000000-0000-4000-8000-%012d\n", i);
	assert_int_equal(gs_podset_check(big, off, &n, &eb), GS_OK);
	assert_int_equal(n, GS_K8S_PODS_MAX);
	assert_true(gs_podset_has(big, off,
	                          "00000000-0000-4000-8000-000000001000"));
	off += (size_t)snprintf(big + off, sizeof(big) - off, "x\n");
	assert_int_equal(gs_podset_check(big, off, &n, &eb), GS_ERR_PARSE);
	assert_non_null(strstr(eb.msg, "more than 1024"));
}

static void malformed_consumers_files_are_refused_with_the_line(void **s)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
	    {"", "line 1"},
	    {"4f1c2a9e-0000-4000-8000-0000000000a1\n", "line 1"},
	    {GS_K8S_PODS_MAGIC "\np1\n\n", "line 3"},
	    {GS_K8S_PODS_MAGIC "\np1,p2\n", "line 2"},
	    {GS_K8S_PODS_MAGIC "\np1\n../x\n", "line 3"},
	};

	(void)s;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gs_errbuf eb = {0};
		int n;

		assert_int_equal(gs_podset_check(bad[i].text,
		                                 strlen(bad[i].text), &n, &eb),
		                 GS_ERR_PARSE);
		assert_non_null(strstr(eb.msg, bad[i].why));
	}
	assert_true(gs_podset_uid_is_valid("p1"));
	assert_false(gs_podset_uid_is_valid(""));
	assert_false(gs_podset_uid_is_valid("a\nb"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        every_driver_and_runtime_form_names_pod_and_container),
	    cmocka_unit_test(processes_of_no_pod_are_not_found),
	    cmocka_unit_test(malformed_pod_cgroups_are_refused_with_the_reason),
	    cmocka_unit_test(v1_hierarchies_naming_different_pods_are_refused),
	    cmocka_unit_test(names_of_runtimes_and_qos_classes),
	    cmocka_unit_test(a_consumers_file_lists_every_pod_of_a_claim),
	    cmocka_unit_test(
	        malformed_consumers_files_are_refused_with_the_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
