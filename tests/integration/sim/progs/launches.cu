/*
 * launches.cu - kernels whose names run long (a template over a type
 * whose mangled name is over 300 characters, a Thrust-like functor
 * template in nested namespaces with a device lambda) load and launch,
 * and the launches a GPU refuses are refused with the real driver's
 * codes: a cooperative grid larger than can be resident at once
 * (cudaErrorCooperativeLaunchTooLarge), a cluster of 16 blocks without
 * cudaFuncAttributeNonPortableClusterSizeAllowed, a grid that is not a
 * multiple of its cluster (cudaErrorInvalidClusterSize); with the
 * attribute set the 16-block cluster launches; an oversized block or
 * grid is refused and runs nothing. Prints "all ok".
 */
#include "check.h"

#include <cooperative_groups.h>
#include <string.h>

#define NAME40 a_type_whose_name_is_forty_characters_xx

namespace gs_outer_namespace_for_testing {
namespace detail_of_the_inner_namespace {
struct a_type_whose_name_is_forty_characters_x0 {};
struct a_type_whose_name_is_forty_characters_x1 {};
struct a_type_whose_name_is_forty_characters_x2 {};
struct a_type_whose_name_is_forty_characters_x3 {};
template <typename A, typename B, typename C, typename D>
struct tuple_of_four_long_named_types {};

template <typename T, int N>
__global__ void kernel_with_a_long_mangled_name(float *out, T)
{
	if (out != nullptr)
		out[threadIdx.x] = (float)N;
}

/* Thrust's shape: a for_each over a functor wrapping a lambda */
template <typename Size, typename F>
struct for_each_functor {
	F f;
	__device__ void operator()(Size i) { f(i); }
};

template <typename Agent, typename F, typename Size>
__global__ void __launch_bounds__(256) kernel_agent(F f, Size n)
{
	Size i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		f(i);
}
} // namespace detail_of_the_inner_namespace
} // namespace gs_outer_namespace_for_testing

namespace d = gs_outer_namespace_for_testing::detail_of_the_inner_namespace;
typedef d::tuple_of_four_long_named_types<
    d::a_type_whose_name_is_forty_characters_x0,
    d::a_type_whose_name_is_forty_characters_x1,
    d::a_type_whose_name_is_forty_characters_x2,
    d::a_type_whose_name_is_forty_characters_x3>
    long_type;

struct policy_agent_name {};

__global__ void coop_kernel(int *p)
{
	cooperative_groups::this_grid().sync();
	if (p != nullptr)
		p[0] = 1;
}

__global__ void cluster_kernel(int *p)
{
	if (p != nullptr)
		p[0] = 1;
}

static void check_long_names(void)
{
	float *out;
	cudaFuncAttributes fa;
	const char *name = nullptr;
	auto lambda = [] __device__(int i) { (void)i; };
	d::for_each_functor<int, decltype(lambda)> fe{lambda};
	auto k1 = d::kernel_with_a_long_mangled_name<long_type, 7>;
	auto k2 = d::kernel_agent<policy_agent_name, decltype(fe), int>;

	CHECK(cudaMalloc(&out, 4096));
	CHECK(cudaFuncGetName(&name, (const void *)k1));
	printf("long name: %zu characters\n", name ? strlen(name) : 0);
	EXPECT(name != nullptr && strlen(name) > 300);
	CHECK(cudaFuncGetAttributes(&fa, (const void *)k1));
	k1<<<1, 32>>>(out, long_type());
	CHECK(cudaGetLastError());
	CHECK(cudaFuncGetName(&name, (const void *)k2));
	printf("thrust-like name: %s\n", name ? name : "(none)");
	CHECK(cudaFuncGetAttributes(&fa, (const void *)k2));
	EXPECT(fa.maxThreadsPerBlock == 256);
	k2<<<4, 256>>>(fe, 1000);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFree(out));
}

static void check_refused_launches(void)
{
	int *p = nullptr, per_sm = 0, sms = 0;
	void *args[] = {&p};
	cudaLaunchConfig_t c = {};
	cudaLaunchAttribute at[1];

	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
	    &per_sm, coop_kernel, 1024, 0));
	EXPECT(per_sm > 0);
	/* a grid that fits runs; one block more does not */
	CHECK(cudaLaunchCooperativeKernel((void *)coop_kernel, per_sm * sms,
	                                  1024, args, 0, 0));
	WANT(cudaLaunchCooperativeKernel((void *)coop_kernel,
	                                 per_sm * sms + 1, 1024, args, 0, 0),
	     cudaErrorCooperativeLaunchTooLarge);
	(void)cudaGetLastError();

	c.gridDim = dim3(32);
	c.blockDim = dim3(64);
	at[0].id = cudaLaunchAttributeClusterDimension;
	at[0].val.clusterDim.x = 16;
	at[0].val.clusterDim.y = 1;
	at[0].val.clusterDim.z = 1;
	c.attrs = at;
	c.numAttrs = 1;
	WANT(cudaLaunchKernelEx(&c, cluster_kernel, p),
	     cudaErrorInvalidClusterSize);
	(void)cudaGetLastError();
	CHECK(cudaFuncSetAttribute(cluster_kernel,
	                           cudaFuncAttributeNonPortableClusterSizeAllowed,
	                           1));
	CHECK(cudaLaunchKernelEx(&c, cluster_kernel, p));
	c.gridDim = dim3(24); /* not a multiple of 16 */
	WANT(cudaLaunchKernelEx(&c, cluster_kernel, p),
	     cudaErrorInvalidClusterSize);
	(void)cudaGetLastError();
	at[0].val.clusterDim.x = 8;
	CHECK(cudaLaunchKernelEx(&c, cluster_kernel, p));
	CHECK(cudaDeviceSynchronize());

	/* a block over 1024 threads, a grid over 65535 in y: refused, and
	 * nothing runs (the sim's driver answers CUDA_ERROR_INVALID_VALUE as
	 * cuLaunchKernel documents, which this runtime passes on as
	 * cudaErrorInvalidValue; a GPU's runtime says
	 * cudaErrorInvalidConfiguration: sim/README.md, "Refused launches") */
	int h = 0, *d = nullptr;
	CHECK(cudaMalloc(&d, sizeof(int)));
	CHECK(cudaMemset(d, 0, sizeof(int)));
	cluster_kernel<<<1, 2048>>>(d);
	cudaError_t e = cudaGetLastError();
	EXPECT(e == cudaErrorInvalidValue ||
	       e == cudaErrorInvalidConfiguration);
	cluster_kernel<<<dim3(1, 65536), 32>>>(d);
	e = cudaGetLastError();
	EXPECT(e == cudaErrorInvalidValue ||
	       e == cudaErrorInvalidConfiguration);
	printf("oversized block and grid: %s\n", cudaGetErrorName(e));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
	EXPECT(h == 0);
	CHECK(cudaFree(d));
}

int main(void)
{
	check_long_names();
	check_refused_launches();
	return finish();
}
