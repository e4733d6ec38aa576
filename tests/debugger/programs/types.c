/* The types dt is checked on against gdb's ptype /o: typedefs, bitfields (one crossing a byte,
 * a 40-bit one, a signed one), a struct and a union nested by name and anonymously, an enum with
 * a negative value, a two-dimensional array, an array of structs, a function pointer, _Bool and a
 * flexible array member. */
#include <stdint.h>

typedef unsigned long long u64;
typedef struct inner {
  char c;
  u64 value;
} inner_t;
enum mode { mode_off, mode_on = 3, mode_auto = -1 };

struct packet {
  uint8_t kind;
  uint16_t length;
  unsigned int version : 4, ihl : 4, dscp : 6, ecn : 2;
  long long wide : 40;
  signed int negative : 3;
  inner_t header;
  struct {
    short a;
    char b[5];
  } named;
  union {
    uint32_t word;
    uint8_t bytes[4];
  };
  struct {
    unsigned short low, high;
  };
  enum mode mode;
  int matrix[2][3];
  struct inner inners[2];
  int (*handler)(int, char*);
  const char* name;
  _Bool flag;
  double d;
  char tail[];
};

union variant {
  int i;
  double d;
  struct inner in;
  char raw[12];
};

typedef union variant variant_t;

struct packet g_packet;
variant_t g_variant;

int main(void) { return g_packet.kind + g_variant.i; }
