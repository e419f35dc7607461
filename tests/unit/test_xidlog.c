/*
 * test_xidlog.c - the driver's Xid kernel-log lines, in the shapes drivers
 * and log transports print them, give the GPU's PCI location, the Xid
 * and the process when there is one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gs/xidlog.h"

static void a_dev_kmsg_record_names_gpu_xid_and_process(void **state)
{
	struct gs_xid_line x;

	(void)state;
	assert_true(gs_xid_line_parse(
	    "4,1187,91234567,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, "
	    "name=python3, Ch 00000008, intr 10000000. MMU Fault: ...",
	    &x));
	assert_int_equal(x.pci_domain, 0);
	assert_int_equal(x.pci_bus, 0x3b);
	assert_int_equal(x.pci_device, 0);
	assert_int_equal(x.xid, 31);
	assert_int_equal(x.pid, 4242);
	assert_string_equal(x.name, "python3");
}

static void syslog_lines_and_function_suffixes_parse_too(void **state)
{
	struct gs_xid_line x;

	(void)state;
	assert_true(gs_xid_line_parse(
	    "Nov 24 10:41:07 node7 kernel: NVRM: Xid (PCI:0001:c1:00.0): 79, "
	    "pid=0, GPU has fallen off the bus.",
	    &x));
	assert_int_equal(x.pci_domain, 1);
	assert_int_equal(x.pci_bus, 0xc1);
	assert_int_equal(x.xid, 79);
	assert_int_equal(x.pid, 0);
	assert_string_equal(x.name, "");
}

static void unknown_or_missing_processes_are_minus_one(void **state)
{
	struct gs_xid_line x;

	(void)state;
	assert_true(gs_xid_line_parse(
	    "NVRM: Xid (PCI:0000:b9:00): 74, pid=<unknown>, name=<unknown>, "
	    "NVLink: fatal error detected on link 6",
	    &x));
	assert_int_equal(x.xid, 74);
	assert_int_equal(x.pid, -1);
	assert_string_equal(x.name, "");
	assert_true(gs_xid_line_parse(
	    "NVRM: Xid (PCI:0000:18:00): 48, An uncorrectable double bit "
	    "error (DBE) has been detected on GPU in the framebuffer",
	    &x));
	assert_int_equal(x.xid, 48);
	assert_int_equal(x.pid, -1);
	/* Quoted values, as some log pipelines rewrite them. */
	assert_true(gs_xid_line_parse(
	    "NVRM: Xid (PCI:0000:03:00): 13, pid='77', name='trainer', "
	    "Graphics SM Warp Exception",
	    &x));
	assert_int_equal(x.pid, 77);
	assert_string_equal(x.name, "trainer");
}

static void other_lines_are_not_xids(void **state)
{
	struct gs_xid_line x;

	(void)state;
	assert_false(gs_xid_line_parse("NVRM: loading NVIDIA UNIX x86_64 "
	                               "Kernel Module  580.65.06",
	                               &x));
	assert_false(gs_xid_line_parse("NVRM: Xid (PCI:zz:00): 31, pid=1", &x));
	assert_false(gs_xid_line_parse("NVRM: Xid (PCI:0000:3b:00): x", &x));
	assert_false(gs_xid_line_parse("", &x));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_dev_kmsg_record_names_gpu_xid_and_process),
	    cmocka_unit_test(syslog_lines_and_function_suffixes_parse_too),
	    cmocka_unit_test(unknown_or_missing_processes_are_minus_one),
	    cmocka_unit_test(other_lines_are_not_xids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
