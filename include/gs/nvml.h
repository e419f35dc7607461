/*
 * nvml.h - the NVML subset gpuslice uses (sim, shim, daemon), declared from
 * shared/reference/nvml-subset.md because nvml.h is not installed with the
 * CUDA toolkit. ABI of nvml.h 13.3.29: struct layouts, constants and the
 * versioned symbol names (call nvmlInit_v2, ..._v3 directly) are checked
 * by static_assert in the sim. Add declarations here, never in a .c file.
 */
/* gpuslice: minimal NVML declarations (subset). ABI of nvml.h 13.3.29 (NVML_API_VERSION 13).
   Link with -lnvidia-ml or dlopen("libnvidia-ml.so.1"). All functions use the platform C ABI. */
#ifndef GS_NVML_SUBSET_H
#define GS_NVML_SUBSET_H

/* ---- opaque handles (pointers to incomplete structs) ---- */
typedef struct nvmlDevice_st          *nvmlDevice_t;          /* GPU or MIG device */
typedef struct nvmlGpuInstance_st     *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;
typedef struct nvmlEventSet_st        *nvmlEventSet_t;

/* ---- return codes ---- */
typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

typedef enum nvmlComputeMode_enum {
    NVML_COMPUTEMODE_DEFAULT = 0,
    NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,   /* support removed */
    NVML_COMPUTEMODE_PROHIBITED = 2,
    NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
    NVML_COMPUTEMODE_COUNT
} nvmlComputeMode_t;

typedef enum nvmlBrandType_enum {
    NVML_BRAND_UNKNOWN = 0, NVML_BRAND_QUADRO = 1, NVML_BRAND_TESLA = 2,
    NVML_BRAND_NVS = 3, NVML_BRAND_GRID = 4, NVML_BRAND_GEFORCE = 5,
    NVML_BRAND_TITAN = 6, NVML_BRAND_NVIDIA_VAPPS = 7, NVML_BRAND_NVIDIA_VPC = 8,
    NVML_BRAND_NVIDIA_VCS = 9, NVML_BRAND_NVIDIA_VWS = 10,
    NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
    NVML_BRAND_NVIDIA_VGAMING = NVML_BRAND_NVIDIA_CLOUD_GAMING,
    NVML_BRAND_QUADRO_RTX = 12, NVML_BRAND_NVIDIA_RTX = 13, NVML_BRAND_NVIDIA = 14,
    NVML_BRAND_GEFORCE_RTX = 15, NVML_BRAND_TITAN_RTX = 16,
    NVML_BRAND_COUNT = 18
} nvmlBrandType_t;

typedef enum nvmlProcessMode_enum {
    NVML_PROCESS_MODE_COMPUTE = 0,
    NVML_PROCESS_MODE_GRAPHICS = 1,
    NVML_PROCESS_MODE_MPS = 2,
    NVML_PROCESS_MODE_ALL = 3,
    NVML_PROCESS_MODE_MAX = 4
} nvmlProcessMode_t;

typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_KEPLER    2
#define NVML_DEVICE_ARCH_MAXWELL   3
#define NVML_DEVICE_ARCH_PASCAL    4
#define NVML_DEVICE_ARCH_VOLTA     5
#define NVML_DEVICE_ARCH_TURING    6
#define NVML_DEVICE_ARCH_AMPERE    7
#define NVML_DEVICE_ARCH_ADA       8
#define NVML_DEVICE_ARCH_HOPPER    9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_RUBIN     13
#define NVML_DEVICE_ARCH_UNKNOWN   0xffffffff

/* ---- sizes and misc constants ---- */
#define NVML_VALUE_NOT_AVAILABLE               (-1)
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16
#define NVML_DEVICE_UUID_BUFFER_SIZE           80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_DEVICE_NAME_BUFFER_SIZE           64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE         30
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80
#define NVML_INIT_FLAG_NO_GPUS     (1 << 0)
#define NVML_INIT_FLAG_NO_ATTACH   (1 << 1)
#define NVML_INIT_FLAG_FORCE_INIT  (1 << 2)
#define NVML_DEVICE_MIG_DISABLE    0x0
#define NVML_DEVICE_MIG_ENABLE     0x1
/* version word of a versioned struct: its size in the low bits, version in bits 24..31 */
#define NVML_STRUCT_VERSION(data, ver) \
    (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((ver) << 24U))

/* ---- MIG profile enums ---- */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE        0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE        0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE        0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE        0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE        0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE        0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE        0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1   0x7   /* 1g with media engines (+me) */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1   0x8   /* 2g with media engines (+me) */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2   0x9   /* 1g with twice the memory */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX    0x0A  /* +gfx */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX    0x0B
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX    0x0C
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME  0x0D  /* -me */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME  0x0E
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0x0F  /* +me.all */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX    0x11
#define NVML_GPU_INSTANCE_PROFILE_COUNT          0x12  /* header 13.3; older headers: smaller */

#define NVML_GPU_INSTANCE_PROFILE_CAPS_P2P      0x1   /* bits of ..._v3_t.capabilities */
#define NVML_GPU_INSTANCE_PROFILE_CAPS_GFX      0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_CAPS_GFX  0x1

#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE      0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE      0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE      0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE      0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE      0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE      0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE      0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL  0x8
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT        0x9
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT  0x1

/* ---- event type bits (unsigned long long masks) ---- */
#define nvmlEventTypeNone                    0x0000000000000000LL
#define nvmlEventTypeSingleBitEccError       0x0000000000000001LL
#define nvmlEventTypeDoubleBitEccError       0x0000000000000002LL
#define nvmlEventTypePState                  0x0000000000000004LL
#define nvmlEventTypeXidCriticalError        0x0000000000000008LL
#define nvmlEventTypeClock                   0x0000000000000010LL
#define nvmlEventTypePowerSourceChange       0x0000000000000080LL
#define nvmlEventMigConfigChange             0x0000000000000100LL
#define nvmlEventTypeSingleBitEccErrorStorm  0x0000000000000200LL
#define nvmlEventTypeDramRetirementEvent     0x0000000000000400LL
#define nvmlEventTypeDramRetirementFailure   0x0000000000000800LL
#define nvmlEventTypeNonFatalPoisonError     0x0000000000001000LL
#define nvmlEventTypeFatalPoisonError        0x0000000000002000LL
#define nvmlEventTypeGpuUnavailableError     0x0000000000004000LL
#define nvmlEventTypeGpuRecoveryAction       0x0000000000008000LL

/* ---- structs (x86-64 sizes in comments, checked with gcc against nvml.h) ---- */
typedef struct nvmlPciInfo_st {                 /* 68 bytes */
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;    /* (device id << 16) | vendor id, e.g. 0x233010DE */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {                  /* 24 bytes */
    unsigned long long total;    /* bytes */
    unsigned long long free;
    unsigned long long used;     /* reserved + allocated */
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {               /* 40 bytes; version = 0x02000028 */
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;     /* allocated only */
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef struct nvmlUtilization_st {             /* 8 bytes */
    unsigned int gpu;            /* % of time a kernel was running */
    unsigned int memory;         /* % of time device memory was read/written */
} nvmlUtilization_t;

typedef struct nvmlProcessInfo_v1_st {          /* 16 bytes; only for the unversioned legacy calls */
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {          /* 24 bytes: pid@0 usedGpuMemory@8 gi@16 ci@20 */
    unsigned int pid;
    unsigned long long usedGpuMemory;   /* bytes */
    unsigned int gpuInstanceId;         /* 0xFFFFFFFF when MIG is off */
    unsigned int computeInstanceId;     /* 0xFFFFFFFF when MIG is off */
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

typedef struct {                                /* 32 bytes */
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessDetail_v1_t;

typedef struct {                                /* 24 bytes; version = 0x01000018 */
    unsigned int version;                /* nvmlProcessDetailList_v1 */
    unsigned int mode;                   /* nvmlProcessMode_t */
    unsigned int numProcArrayEntries;    /* in: capacity, out: count */
    nvmlProcessDetail_v1_t *procArray;
} nvmlProcessDetailList_v1_t;
typedef nvmlProcessDetailList_v1_t nvmlProcessDetailList_t;
#define nvmlProcessDetailList_v1 NVML_STRUCT_VERSION(ProcessDetailList, 1)

/* Per-process accounting (nvmlDeviceGetAccountingStats; accounting mode
 * on). While the process runs, time is 0 and gpuUtilization covers its
 * life so far; once it ended, time is how long its context was active
 * (ms) and gpuUtilization the share of that time with a kernel running. */
typedef struct nvmlAccountingStats_st {  /* 56 bytes: gpu@0 mem@4 maxMem@8 time@16 start@24 running@32 */
    unsigned int gpuUtilization;     /* percent of its life with a kernel running */
    unsigned int memoryUtilization;  /* percent of its life with memory read or written */
    unsigned long long maxMemoryUsage; /* bytes, most it ever allocated */
    unsigned long long time;         /* ms its context was active; 0 while it runs */
    unsigned long long startTime;    /* CPU time it started, microseconds */
    unsigned int isRunning;          /* 1 running, 0 terminated */
    unsigned int reserved[5];
} nvmlAccountingStats_t;

typedef struct nvmlProcessUtilizationSample_st {  /* 32 bytes: pid@0 timeStamp@8 sm@16 mem@20 enc@24 dec@28 */
    unsigned int pid;
    unsigned long long timeStamp;   /* CPU time, microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {                                /* 40 bytes: timeStamp@0 pid@8 */
    unsigned long long timeStamp;
    unsigned int pid;
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
    unsigned int jpgUtil;
    unsigned int ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

typedef struct {                                /* 24 bytes; version = 0x01000018 */
    unsigned int version;                /* nvmlProcessesUtilizationInfo_v1 */
    unsigned int processSamplesCount;    /* in: capacity, out: count */
    unsigned long long lastSeenTimeStamp;
    nvmlProcessUtilizationInfo_v1_t *procUtilArray;
} nvmlProcessesUtilizationInfo_v1_t;
typedef nvmlProcessesUtilizationInfo_v1_t nvmlProcessesUtilizationInfo_t;
#define nvmlProcessesUtilizationInfo_v1 NVML_STRUCT_VERSION(ProcessesUtilizationInfo, 1)

typedef struct nvmlDeviceAttributes_st {        /* 40 bytes; MIG device handles only */
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    unsigned int gpuInstanceSliceCount;
    unsigned int computeInstanceSliceCount;
    unsigned long long memorySizeMB;     /* MiB */
} nvmlDeviceAttributes_t;

typedef struct nvmlGpuInstancePlacement_st {    /* 8 bytes */
    unsigned int start;          /* first memory slice */
    unsigned int size;           /* number of memory slices */
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {  /* 48 bytes; memorySizeMB@40 */
    unsigned int id;             /* driver profile ID (19, 20, 15, 14, 9, 5, 0 ... ) */
    unsigned int isP2pSupported;
    unsigned int sliceCount;     /* compute slices */
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;     /* MiB */
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceProfileInfo_v2_st {  /* 152 bytes; memorySizeMB@48 name@56; version = 0x02000098 */
    unsigned int version;
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];    /* e.g. "MIG 1g.10gb" */
} nvmlGpuInstanceProfileInfo_v2_t;
#define nvmlGpuInstanceProfileInfo_v2 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2)

typedef struct nvmlGpuInstanceProfileInfo_v3_st {  /* 152 bytes; memorySizeMB@40 name@48 capabilities@144; version = 0x03000098 */
    unsigned int version;
    unsigned int id;
    unsigned int sliceCount;     /* no isP2pSupported in v3 */
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned int capabilities;   /* NVML_GPU_INSTANCE_PROFILE_CAPS_* */
} nvmlGpuInstanceProfileInfo_v3_t;
#define nvmlGpuInstanceProfileInfo_v3 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 3)

typedef struct nvmlGpuInstanceInfo_st {         /* 24 bytes: device@0 id@8 profileId@12 placement@16 */
    nvmlDevice_t device;         /* parent GPU */
    unsigned int id;             /* GPU instance id (GI id) */
    unsigned int profileId;      /* driver profile ID */
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct nvmlComputeInstancePlacement_st {  /* 8 bytes */
    unsigned int start;          /* first compute slice inside the GI */
    unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct nvmlComputeInstanceProfileInfo_st {  /* 36 bytes */
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct nvmlComputeInstanceProfileInfo_v2_st {  /* 136 bytes; name@40; version = 0x02000088 */
    unsigned int version;
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlComputeInstanceProfileInfo_v2_t;
#define nvmlComputeInstanceProfileInfo_v2 NVML_STRUCT_VERSION(ComputeInstanceProfileInfo, 2)

typedef struct nvmlComputeInstanceProfileInfo_v3_st {  /* 140 bytes; capabilities@136; version = 0x0300008C */
    unsigned int version;
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned int capabilities;
} nvmlComputeInstanceProfileInfo_v3_t;
#define nvmlComputeInstanceProfileInfo_v3 NVML_STRUCT_VERSION(ComputeInstanceProfileInfo, 3)

typedef struct nvmlComputeInstanceInfo_st {     /* 32 bytes: device@0 gpuInstance@8 id@16 profileId@20 placement@24 */
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id;             /* CI id inside its GI */
    unsigned int profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

typedef struct nvmlEventData_st {               /* 32 bytes: device@0 eventType@8 eventData@16 gi@24 ci@28 */
    nvmlDevice_t device;
    unsigned long long eventType;   /* one nvmlEventType* bit */
    unsigned long long eventData;   /* Xid number for XidCriticalError; 999 = unknown Xid; else 0 */
    unsigned int gpuInstanceId;     /* 0xFFFFFFFF if not attributable to a GI */
    unsigned int computeInstanceId; /* 0xFFFFFFFF if not attributable to a CI */
} nvmlEventData_t;

/* ---- functions ---- */
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion);
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length);

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length);
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type);
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor);
nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int *numCores);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode);
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode);
nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes);

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device, nvmlProcessDetailList_t *plist);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization, unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp);
nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device, nvmlEnableState_t *mode);
nvmlReturn_t nvmlDeviceSetAccountingMode(nvmlDevice_t device, nvmlEnableState_t mode);
nvmlReturn_t nvmlDeviceGetAccountingPids(nvmlDevice_t device, unsigned int *count, unsigned int *pids);
nvmlReturn_t nvmlDeviceGetAccountingStats(nvmlDevice_t device, unsigned int pid, nvmlAccountingStats_t *stats);
nvmlReturn_t nvmlDeviceGetAccountingBufferSize(nvmlDevice_t device, unsigned int *bufferSize);
nvmlReturn_t nvmlDeviceClearAccountingPids(nvmlDevice_t device);
nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device, nvmlProcessesUtilizationInfo_t *procesesUtilInfo);

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode);
nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode, nvmlReturn_t *activationStatus);
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t *info);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstanceProfileInfo_v2_t *info);
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements, unsigned int *count);
nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId, unsigned int *count);
nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstance);
nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement, nvmlGpuInstance_t *gpuInstance);
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance);
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstances, unsigned int *count);
nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance);
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile, nvmlComputeInstanceProfileInfo_t *info);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile, nvmlComputeInstanceProfileInfo_v2_t *info);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gpuInstance, unsigned int profileId, unsigned int *count);
nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstancePlacement_t *placements, unsigned int *count);
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t *computeInstance);
nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(nvmlGpuInstance_t gpuInstance, unsigned int profileId, const nvmlComputeInstancePlacement_t *placement, nvmlComputeInstance_t *computeInstance);
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance);
nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t *computeInstances, unsigned int *count);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id, nvmlComputeInstance_t *computeInstance);
nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice);
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device);

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

#endif
