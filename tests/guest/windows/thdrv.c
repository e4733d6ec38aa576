/* thdrv.sys, a driver of the Windows-shaped test guest: a third kernel module with a PDB. */
#define NOINLINE __declspec(noinline)

typedef struct _THDRV_DEVICE_EXTENSION {
  unsigned long Signature; /* 'THDV' */
  unsigned long OpenCount;
  unsigned long long LastStatus;
} THDRV_DEVICE_EXTENSION;

THDRV_DEVICE_EXTENSION ThdrvExtension = {0x56444854, 0, 0};

NOINLINE long ThdrvDispatchCreate(THDRV_DEVICE_EXTENSION* extension) {
  extension->OpenCount += 1;
  return 0;
}

long DriverEntry(void* driver_object, void* registry_path) {
  (void)registry_path;
  const long status = ThdrvDispatchCreate(&ThdrvExtension);
  ThdrvExtension.LastStatus = (unsigned long long)driver_object + (unsigned long long)status;
  return status;
}
