/*
 * multigpu.cu - an ordinary CUDA runtime program that selects devices
 * other than 0, from one thread and from several, and says on which
 * device each of its allocations and launches landed (as the runtime
 * reports it); then it holds its memory until a line arrives on stdin so
 * the test can read the simulated node's own books (which GPU charges
 * which bytes, which GPU was busy). Used by
 * runtime_programs_land_on_the_device_they_chose.sh.
 *
 * Device 1 gets 1 GiB from the main thread (cudaSetDevice), device 2
 * 2 GiB from a second thread (cudaSetDevice), device 1 another 512 MiB
 * from a third thread (cudaInitDevice then cudaSetDevice); device 0 is
 * never selected and must stay empty.
 */
#include "check.h"

#include <pthread.h>
#include <stdlib.h>

#define MIB (1ull << 20)

__global__ void busy(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = 0.0f;

	for (int k = 0; k < n; k++)
		v = v * 1.0001f + 0.5f;
	p[i % 1024] = v;
}

struct job {
	int dev;
	bool init_first;
	size_t bytes;
	void *p;
};

/* Selects j->dev, allocates, launches, checks where it all went. */
static void use_device(struct job *j)
{
	cudaPointerAttributes a;
	int d = -1;

	if (j->init_first)
		CHECK(cudaInitDevice(j->dev, 0, 0));
	CHECK(cudaSetDevice(j->dev));
	CHECK(cudaGetDevice(&d));
	EXPECT(d == j->dev);
	CHECK(cudaMalloc(&j->p, j->bytes));
	CHECK(cudaPointerGetAttributes(&a, j->p));
	EXPECT(a.device == j->dev);
	for (int i = 0; i < 20; i++)
		busy<<<64, 128>>>((float *)j->p, 64);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaGetDevice(&d));
	EXPECT(d == j->dev);
	printf("dev %d: %zu MiB at %p (runtime says device %d)\n", j->dev,
	       j->bytes / MIB, j->p, a.device);
}

static void *thread_main(void *arg)
{
	use_device((struct job *)arg);
	return NULL;
}

int main(void)
{
	struct job main_job = {1, false, 1024 * MIB, NULL};
	struct job jobs[2] = {{2, false, 2048 * MIB, NULL},
	                      {1, true, 512 * MIB, NULL}};
	pthread_t t[2];
	char line[16];
	int n = 0;

	CHECK(cudaGetDeviceCount(&n));
	if (n < 3) {
		printf("FAIL need 3 devices, have %d\n", n);
		return 1;
	}
	use_device(&main_job);
	for (int i = 0; i < 2; i++)
		EXPECT(pthread_create(&t[i], NULL, thread_main, &jobs[i]) == 0);
	for (int i = 0; i < 2; i++)
		EXPECT(pthread_join(t[i], NULL) == 0);
	printf("%s\n", failures ? "failed" : "ready");
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL)
		return 1;
	CHECK(cudaSetDevice(1));
	CHECK(cudaFree(main_job.p));
	CHECK(cudaFree(jobs[1].p));
	CHECK(cudaSetDevice(2));
	CHECK(cudaFree(jobs[0].p));
	printf("%s\n", failures ? "failed" : "done");
	return failures ? 1 : 0;
}
