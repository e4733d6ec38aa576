/* hal.dll of the Windows-shaped test guest: a second kernel module with a PDB (never called). */
#define EXPORT __declspec(dllexport)
#define NOINLINE __declspec(noinline)

volatile unsigned long long HalpPerformanceCounter;

EXPORT NOINLINE unsigned long long KeQueryPerformanceCounter(unsigned long long* frequency) {
  if (frequency) *frequency = 10000000;
  return ++HalpPerformanceCounter;
}

EXPORT NOINLINE void HalReturnToFirmware(unsigned long routine) {
  unsigned long long f = 0;
  HalpPerformanceCounter += KeQueryPerformanceCounter(&f) + routine;
}
