"""What a shop sign means: brand and sign words -> kind of place and what it offers.

A sign reading "Starbucks" says nothing to a sentence embedder about thirst or Wi-Fi; the
lexicon turns it into "Starbucks: a cafe selling coffee, tea, cold drinks and pastries, with
Wi-Fi and a restroom" before embedding, and gives each kind the OpenStreetMap classes the need
catalogue (worlds.needs) uses, so a reader can tell when a sign satisfies a request. It covers
the chains of the bundled Monaco and Helsinki worlds, the Hong Kong chains the HK6 dresser puts
up (worlds.dress), the renderer's generic sign words, and common sign words in French, Finnish,
Swedish, German, Italian and Chinese (traditional and simplified), with German, Italian, Swiss and
mainland Chinese chains. Matching tolerates OCR noise: truncated or slightly misread words.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Kind:
    """A kind of place: how to describe it, the OSM classes it would be mapped with, and the OSM
    attribute tags its sign itself tells (a pizzeria's cuisine; nothing about wheelchair access)."""

    description: str  # "a cafe selling coffee, ..." (completes "<sign text>: ...")
    classes: tuple[str, ...]
    tags: tuple[tuple[str, str], ...] = ()


# What a sign can say about a place beyond its kind, as OSM attribute tags.
KIND_TAGS: dict[str, tuple[tuple[str, str], ...]] = {
    "italian": (("cuisine", "italian"),), "japanese": (("cuisine", "japanese"),),
    "chinese": (("cuisine", "chinese"),), "asian": (("cuisine", "asian"),), "french": (("cuisine", "french"),),
    "vegetarian": (("diet:vegetarian", "yes"),), "fast_food": (("takeaway", "yes"),),
}

KINDS: dict[str, Kind] = {k: Kind(d, tuple(c.split()), KIND_TAGS.get(k, ())) for k, d, c in (
    ("cafe", "a cafe selling coffee, tea, cold drinks and pastries, a place to sit and read", "amenity=cafe"),
    ("bubble_tea", "a drinks shop selling bubble tea, fruit tea, juice and cold drinks", "shop=beverages"),
    ("restaurant", "a restaurant serving meals", "amenity=restaurant"),
    ("french", "a French brasserie or bistro serving French food", "amenity=restaurant"),
    ("italian", "an Italian restaurant serving pizza and pasta", "amenity=restaurant"),
    ("japanese", "a Japanese restaurant serving sushi, ramen and other Asian food", "amenity=restaurant"),
    ("chinese", "a Chinese restaurant serving Cantonese food, dim sum, noodles and other Asian food",
     "amenity=restaurant"),
    ("asian", "an Asian restaurant serving Thai, Vietnamese, Indian or Korean food", "amenity=restaurant"),
    ("vegetarian", "a vegetarian restaurant serving meat-free food", "amenity=restaurant"),
    ("fast_food", "a fast-food restaurant selling burgers, fries, food to take away and soft drinks",
     "amenity=fast_food"),
    ("bakery", "a bakery selling bread, cakes, pastries and sandwiches", "shop=bakery shop=pastry"),
    ("ice_cream", "an ice cream parlour selling ice cream and cold drinks", "amenity=ice_cream"),
    ("bar", "a bar serving drinks, beer, wine and cocktails", "amenity=bar amenity=pub"),
    ("convenience", "a convenience store selling drinks, snacks, food and phone top-up cards, with an ATM",
     "shop=convenience"),
    ("supermarket", "a supermarket selling groceries, fresh fruit and vegetables, food and drinks", "shop=supermarket"),
    ("department_store", "a department store and shopping mall with many shops, a food hall and restrooms",
     "shop=department_store shop=mall"),
    ("greengrocer", "a greengrocer selling fresh fruit and vegetables", "shop=greengrocer"),
    ("market", "a market selling fresh food, fruit and vegetables", "amenity=marketplace"),
    ("pharmacy", "a pharmacy selling medicine, first aid and health products", "amenity=pharmacy healthcare=pharmacy"),
    ("chemist", "a chemist selling medicine, cosmetics and personal care products", "shop=chemist"),
    ("clinic", "a medical clinic with doctors, for when you feel ill", "amenity=clinic amenity=doctors"),
    ("hospital", "a hospital with doctors and emergency care", "amenity=hospital"),
    ("dentist", "a dental clinic", "amenity=dentist"),
    ("bank", "a bank with cash machines (ATM) for money", "amenity=bank"),
    ("atm", "a cash machine (ATM) for withdrawing money", "amenity=atm"),
    ("exchange", "a currency exchange office", "amenity=bureau_de_change"),
    ("hotel", "a hotel with rooms to stay the night, a lobby and restrooms", "tourism=hotel"),
    ("hostel", "a hostel or guest house with cheap rooms", "tourism=hostel tourism=guest_house"),
    ("post_office", "a post office for letters and parcels", "amenity=post_office"),
    ("school", "a primary or secondary school", "amenity=school"),
    ("university", "a university", "amenity=university"),
    ("library", "a public library with books, quiet reading rooms and free Wi-Fi", "amenity=library"),
    ("bookshop", "a bookshop selling books and magazines", "shop=books"),
    ("newsagent", "a newsagent selling newspapers, magazines, snacks and drinks", "shop=newsagent"),
    ("toilets", "public toilets, a restroom (WC)", "amenity=toilets"),
    ("bus_stop", "a bus stop where city buses stop", "highway=bus_stop"),
    ("bus_station", "a bus station, a terminus of many bus routes", "amenity=bus_station"),
    ("station", "a railway station with trains to the city and the airport",
     "railway=station public_transport=station"),
    ("metro", "a metro (subway) station entrance", "railway=subway_entrance railway=station"),
    ("tram", "a tram stop", "railway=tram_stop"),
    ("taxi", "a taxi stand where taxis wait", "amenity=taxi"),
    ("ferry", "a ferry terminal for boats", "amenity=ferry_terminal"),
    ("car_rental", "a car rental agency", "amenity=car_rental"),
    ("parking", "a car park (parking garage)", "amenity=parking"),
    ("fuel", "a petrol station selling fuel, snacks and drinks", "amenity=fuel"),
    ("cinema", "a cinema showing films", "amenity=cinema"),
    ("theatre", "a theatre for plays and concerts", "amenity=theatre"),
    ("museum", "a museum with exhibitions, good to visit with children", "tourism=museum"),
    ("gym", "a gym (fitness centre) to exercise and work out", "leisure=fitness_centre"),
    ("sports_centre", "a sports centre to exercise and play sports", "leisure=sports_centre"),
    ("pool", "a swimming pool to swim and exercise", "leisure=swimming_pool"),
    ("park", "a park with trees, benches and green space to walk, run, rest and play", "leisure=park leisure=garden"),
    ("playground", "a children's playground where kids play", "leisure=playground"),
    ("toys", "a toy shop selling toys and games for children", "shop=toys"),
    ("drinking_water", "a drinking water fountain with free water", "amenity=drinking_water"),
    ("phone", "a mobile phone shop selling phones, SIM cards and prepaid phone credit top-up",
     "shop=mobile_phone shop=telecommunication"),
    ("electronics", "an electronics store selling phones, computers and SIM cards", "shop=electronics"),
    ("clothes", "a fashion boutique selling clothes", "shop=clothes"),
    ("shoes", "a shoe shop", "shop=shoes"),
    ("sports_shop", "a sports shop selling sportswear and shoes", "shop=sports"),
    ("jewelry", "a jewellery shop selling jewellery and watches", "shop=jewelry"),
    ("watches", "a watch shop selling luxury watches", "shop=watches"),
    ("cosmetics", "a cosmetics shop selling beauty and skin-care products", "shop=cosmetics"),
    ("perfumery", "a perfume shop", "shop=perfumery"),
    ("optician", "an optician selling glasses", "shop=optician"),
    ("car_dealer", "a car dealership selling cars", "shop=car"),
    ("motorcycle", "a scooter and motorcycle dealer", "shop=motorcycle"),
    ("household", "a household goods store selling tools, home and kitchen products", "shop=doityourself"),
    ("kitchen", "a kitchen showroom", "shop=kitchen"),
    ("estate_agent", "an estate agent selling and renting flats", "office=estate_agent"),
    ("alcohol", "a shop selling wine, beer and spirits", "shop=alcohol"),
    ("hairdresser", "a hairdresser", "shop=hairdresser"),
    ("police", "a police station", "amenity=police"),
    ("townhall", "the town hall", "amenity=townhall"),
    ("church", "a church", "amenity=place_of_worship"),
    ("casino", "a gambling casino", "amenity=casino"),
    ("information", "a tourist information office", "tourism=information"),
    ("apartments", "a residential apartment building", "building=apartments"),
    ("florist", "a florist selling flowers", "shop=florist"),
    ("butcher", "a butcher selling meat", "shop=butcher"),
)}


@dataclass(frozen=True)
class Entry:
    """A brand or sign word. `aliases` are what a sign may show (any script); an alias starting
    with "=" only matches as whole words, for short or common words ("bar" is not "Barclays")."""

    name: str
    kind: str
    aliases: tuple[str, ...]
    extras: tuple[str, ...] = ()  # what this one has beyond its kind ("Wi-Fi", "a restroom")
    brand: bool = True

    @property
    def classes(self) -> tuple[str, ...]:
        return KINDS[self.kind].classes

    @property
    def tags(self) -> dict[str, str]:
        """Attribute tags the sign tells: its kind's, and Wi-Fi where this one is known to have it."""
        return dict(KINDS[self.kind].tags) | ({"internet_access": "wlan"} if WIFI in self.extras else {})

    def describe(self) -> str:
        text = KINDS[self.kind].description
        return f"{text}, with {_join(self.extras)}" if self.extras else text


def _join(items: tuple[str, ...]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


WIFI, RESTROOM, ATM, SEATS = "Wi-Fi", "a restroom", "an ATM", "places to sit"


def _b(name: str, kind: str, *aliases: str, extras: tuple[str, ...] = ()) -> Entry:
    return Entry(name, kind, (name, *aliases), extras)


def _g(kind: str, *words: str) -> Entry:
    return Entry(words[0].lstrip("="), kind, words, brand=False)


BRANDS: tuple[Entry, ...] = (
    # Coffee, drinks, food.
    _b("Starbucks", "cafe", "星巴克", "Starbucks Coffee", extras=(WIFI, RESTROOM)),
    _b("Costa", "cafe", "Costa Coffee", extras=(WIFI, RESTROOM)),
    _b("Espresso House", "cafe", extras=(WIFI, RESTROOM)),
    _b("Robert's Coffee", "cafe", "Roberts Coffee", extras=(WIFI,)),
    _b("Fazer Café", "cafe", "Fazer", extras=(WIFI,)),
    _b("La Torrefazione", "cafe", extras=(WIFI,)),
    _b("Picnic", "cafe", "=picnic", extras=(WIFI,)),
    _b("Pacific Coffee", "cafe", "太平洋咖啡", extras=(WIFI, RESTROOM)),
    _b("Honolulu Coffee Shop", "cafe", "檀島咖啡餅店", "檀島"),
    _b("Tim Hortons", "cafe", extras=(WIFI,)),
    _b("Pret A Manger", "cafe", "Pret", extras=(WIFI,)),
    _b("Chagee", "bubble_tea", "霸王茶姬"),
    _b("CoCo", "bubble_tea", "=coco", "都可", "CoCo Fresh Tea"),
    _b("Yi Fang", "bubble_tea", "一芳", "Yi Fang Taiwan Fruit Tea"),
    _b("Häagen-Dazs", "ice_cream", "Haagen Dazs"),
    _b("McDonald's", "fast_food", "McDonalds", "麥當勞", "麦当劳", extras=(RESTROOM, WIFI, SEATS)),
    _b("KFC", "fast_food", "肯德基", extras=(RESTROOM, SEATS)),
    _b("Burger King", "fast_food", extras=(RESTROOM, SEATS)),
    _b("Hesburger", "fast_food", extras=(RESTROOM, SEATS)),
    _b("Subway", "fast_food", "賽百味", extras=(SEATS,)),
    _b("Five Guys", "fast_food", extras=(RESTROOM,)),
    _b("Café de Coral", "fast_food", "Cafe de Coral", "大家樂", extras=(SEATS,)),
    _b("Fairwood", "fast_food", "大快活", extras=(SEATS,)),
    _b("Kotipizza", "italian"),
    _b("Vapiano", "italian"),
    _b("Pizza Hut", "italian", "必勝客"),
    _b("PizzaExpress", "italian", "Pizza Express"),
    _b("Domino's", "italian", "Dominos"),
    _b("Crazy Pizza", "italian"),
    _b("Tsui Wah", "chinese", "翠華", "翠華餐廳"),
    _b("Tai Hing", "chinese", "太興", "太興燒味"),
    _b("TamJai", "chinese", "譚仔", "Tam Jai", "雲南米線"),
    _b("Tao Heung", "chinese", "稻香"),
    _b("Maxim's Palace", "chinese", "美心皇宮"),
    _b("Lei Garden", "chinese", "利苑", "利苑酒家"),
    _b("Jade Garden", "chinese", "翠園"),
    _b("Super Star Seafood", "chinese", "鴻星", "鴻星海鮮酒家"),
    _b("Genki Sushi", "japanese", "元気寿司", "元氣壽司"),
    _b("Kung Tak Lam", "vegetarian", "功德林"),
    _b("Hard Rock Cafe", "restaurant"),
    _b("UniCafe", "restaurant", "Unicafe"),
    _b("Saint Honoré", "bakery", "Saint Honore", "聖安娜", "聖安娜餅屋"),
    _b("Maxim's Cakes", "bakery", "美心西餅"),
    _b("Arome", "bakery", "東海堂"),
    _b("Paul", "bakery", "=paul"),
    # Shops for food and daily needs.
    _b("7-Eleven", "convenience", "7 Eleven", "7Eleven", "Seven Eleven", "七十一"),
    _b("Circle K", "convenience", "OK便利店", "=ok"),
    _b("R-kioski", "convenience", "R Kioski", "Rkioski"),
    _b("Petit Casino", "convenience"),
    _b("Carrefour City", "convenience", "Carrefour Express"),
    _b("Utile", "convenience", "=utile"),
    _b("Casino Supermarché", "supermarket", "Géant Casino", "Casino Shop"),  # "Casino" alone: see GENERIC
    _b("Carrefour", "supermarket", "=carrefour", "Carrefour Market"),
    _b("Marché U", "supermarket", "Super U", "Hyper U"),
    _b("Spar", "supermarket", "=spar"),
    _b("Biocoop", "supermarket"),
    _b("Monoprix", "supermarket"),
    _b("Franprix", "supermarket"),
    _b("Lidl", "supermarket"),
    _b("Aldi", "supermarket"),
    _b("Tesco", "supermarket"),
    _b("K-Market", "supermarket", "K Market", "K-Supermarket", "K-Citymarket"),
    _b("S-Market", "supermarket", "S Market", "Prisma"),
    _b("Alepa", "supermarket", "Sale", "=sale"),
    _b("ParknShop", "supermarket", "Park n Shop", "百佳", "百佳超級市場"),
    _b("Wellcome", "supermarket", "惠康"),
    _b("CR Vanguard", "supermarket", "華潤萬家", "Vanguard"),
    _b("AEON", "department_store", "永旺", "永旺百貨", extras=(RESTROOM,)),
    _b("YATA", "department_store", "一田", "一田百貨", extras=(RESTROOM,)),
    _b("SOGO", "department_store", "崇光", "崇光百貨", extras=(RESTROOM,)),
    _b("Wing On", "department_store", "永安", "永安百貨", extras=(RESTROOM,)),
    _b("Stockmann", "department_store", extras=(RESTROOM,)),
    _b("Galeries Lafayette", "department_store", extras=(RESTROOM,)),
    _b("Fnac", "electronics", extras=("books",)),
    _b("Fortress", "electronics", "豐澤"),
    _b("Broadway", "electronics", "百老匯"),
    _b("Clas Ohlson", "household"),
    _b("Maison de la Presse", "newsagent"),
    _b("Alko", "alcohol"),
    # Health.
    _b("Watsons", "chemist", "屈臣氏"),
    _b("Mannings", "chemist", "萬寧"),
    _b("Yliopiston Apteekki", "pharmacy"),
    _b("Quality HealthCare", "clinic", "卓健", "卓健醫療中心"),
    _b("Town Health", "clinic", "康健", "康健醫療中心"),
    # Money.
    _b("HSBC", "bank", "滙豐", "匯豐", extras=(ATM,)),
    _b("Bank of China", "bank", "中國銀行", "中银香港", "BOC", extras=(ATM,)),
    _b("Hang Seng Bank", "bank", "Hang Seng", "恒生", "恒生銀行", extras=(ATM,)),
    _b("Standard Chartered", "bank", "渣打", "渣打銀行", extras=(ATM,)),
    _b("Bank of East Asia", "bank", "東亞銀行", "BEA", extras=(ATM,)),
    _b("JETCO", "atm", "銀通", "銀通櫃員機"),
    _b("BNP Paribas", "bank", "BNP", extras=(ATM,)),
    _b("Société Générale", "bank", "Societe Generale", extras=(ATM,)),
    _b("Banque Populaire", "bank", extras=(ATM,)),
    _b("Crédit Mutuel", "bank", "Credit Mutuel", extras=(ATM,)),
    _b("Crédit Agricole", "bank", "Credit Agricole", extras=(ATM,)),
    _b("CIC", "bank", extras=(ATM,)),
    _b("LCL", "bank", extras=(ATM,)),
    _b("CMB", "bank", "Compagnie Monégasque de Banque", extras=(ATM,)),
    _b("Barclays", "bank", extras=(ATM,)),
    _b("UBS", "bank", extras=(ATM,)),
    _b("Credit Suisse", "bank", extras=(ATM,)),
    _b("BSI", "bank"),
    _b("Julius Baer", "bank"),
    _b("Santander", "bank", extras=(ATM,)),
    _b("Nordea", "bank", extras=(ATM,)),
    _b("Handelsbanken", "bank", extras=(ATM,)),
    _b("Aktia", "bank", extras=(ATM,)),
    _b("OP", "bank", "=op", "Osuuspankki", extras=(ATM,)),
    _b("Danske Bank", "bank", extras=(ATM,)),
    _b("Suomen Pankki", "bank"),
    _b("Forex Bank", "exchange", "Forex"),
    _b("Otto", "atm", "=otto", "Otto automaatti"),
    # Lodging.
    _b("Fairmont", "hotel"),
    _b("Novotel", "hotel"),
    _b("ibis", "hotel", "宜必思", "宜必思酒店"),
    _b("Hilton", "hotel"),
    _b("Holiday Inn", "hotel", "Holiday Inn Express", "快捷假日酒店"),
    _b("Scandic", "hotel"),
    _b("Sokos Hotel", "hotel", "Sokos"),
    _b("Regal", "hotel", "富豪酒店"),
    _b("Dorsett", "hotel", "帝盛", "帝盛酒店"),
    _b("Hermitage", "hotel", "Hôtel Hermitage"),
    _b("Hôtel de Paris", "hotel"),
    # Transport and services.
    _b("MTR", "metro", "港鐵", "港鐵站"),
    _b("Hong Kong Tramways", "tram", "電車"),
    _b("HSL", "bus_stop", "=hsl"),
    _b("Avis", "car_rental"),
    _b("Hertz", "car_rental"),
    _b("Europcar", "car_rental"),
    _b("Sixt", "car_rental"),
    _b("Esso", "fuel"),
    _b("Shell", "fuel"),
    _b("BP", "fuel", "=bp"),
    _b("Neste", "fuel"),
    _b("Wilson Parking", "parking", "威信停車場"),
    _b("La Poste", "post_office"),
    _b("Posti", "post_office", "=posti"),
    _b("Hongkong Post", "post_office", "Hong Kong Post", "香港郵政"),
    _b("csl", "phone", "=csl"),
    _b("SmarTone", "phone", "數碼通"),
    _b("China Mobile", "phone", "中國移動"),
    _b("Monaco Telecom", "phone"),
    _b("Elisa", "phone"),
    _b("DNA", "phone", "=dna"),
    _b("Telia", "phone"),
    # Leisure.
    _b("MCL", "cinema", "MCL戲院", "MCL Cinemas"),
    _b("Emperor Cinemas", "cinema", "英皇戲院"),
    _b("Golden Harvest", "cinema", "嘉禾"),
    _b("Finnkino", "cinema"),
    _b("Fitness First", "gym"),
    _b("Pure Fitness", "gym"),
    _b("Anytime Fitness", "gym"),
    _b("Toys\"R\"Us", "toys", "Toys R Us", "ToysRUs", "玩具反斗城"),
    # Fashion, jewellery, cars: common in the worlds, none meets a usual need.
    *(_b(n, "clothes") for n in (
        "Chanel", "Dior", "Prada", "Gucci", "Hermès", "Louis Vuitton", "Balenciaga", "Fendi", "Versace",
        "Giorgio Armani", "Saint Laurent", "Salvatore Ferragamo", "Brooks Brothers", "Caroll", "Zara", "H&M",
        "COS", "Marimekko", "Gina Tricot", "Vero Moda", "Du Pareil au Même", "Giordano", "Bossini", "G2000",
        "Baleno", "Uniqlo")),
    _b("Nike", "sports_shop"),
    _b("Stadium", "sports_shop"),
    _b("Din Sko", "shoes"),
    *(_b(n, "jewelry") for n in ("Cartier", "Chaumet", "Van Cleef & Arpels", "Graff", "Bulgari", "Tiffany",
                                 "Chow Tai Fook", "Chow Sang Sang", "Lukfook", "TSL", "Kultajousi")),
    _b("周大福", "jewelry"), _b("周生生", "jewelry"), _b("六福珠寶", "jewelry"), _b("謝瑞麟", "jewelry"),
    *(_b(n, "watches") for n in ("Rolex", "Audemars Piguet", "Piaget", "Vacheron Constantin", "Omega",
                                 "City Chain")),
    _b("時間廊", "watches"),
    *(_b(n, "car_dealer") for n in ("Aston Martin", "Audi", "Ferrari", "Honda", "Lexus", "Mercedes-Benz",
                                    "Porsche", "Rolls Royce", "Toyota", "Volkswagen", "McLaren", "Lamborghini",
                                    "Bentley", "BMW")),
    _b("Vespa", "motorcycle"),
    _b("bulthaup", "kitchen"),
    _b("Sasa", "cosmetics", "莎莎"), _b("Bonjour", "cosmetics", "卓悅"),
    _b("Optical 88", "optician", "眼鏡88"),
    *(_b(n, "estate_agent") for n in ("Centaline", "中原地產", "Midland", "美聯物業", "Ricacorp", "利嘉閣")),
)

# Sign words in English, French, Italian, Finnish and Chinese (traditional and simplified).
GENERIC: tuple[Entry, ...] = (
    _g("cafe", "cafe", "café", "=caffe", "coffee", "coffee shop", "espresso", "salon de thé", "kahvila", "kahvio",
       "咖啡", "咖啡店", "咖啡室", "茶餐廳"),
    _g("bubble_tea", "bubble tea", "juice", "juice bar", "tea house", "茶飲", "奶茶", "果汁"),
    _g("french", "brasserie", "bistro", "bistrot", "crêperie", "creperie"),
    _g("restaurant", "restaurant", "=resto", "=grill", "ristorante", "ravintola",
       "ruokasali", "trattoria", "osteria", "taverna", "餐廳", "餐厅", "酒家", "酒樓", "飯店", "食堂"),
    _g("italian", "pizzeria", "pizza", "pasta", "trattoria", "italiano", "italian"),
    _g("japanese", "sushi", "ramen", "=izakaya", "寿司", "壽司", "日本料理"),
    _g("chinese", "chinese", "dim sum", "點心", "燒味", "米線", "粉麵", "中菜"),
    _g("asian", "thai", "=wok", "=pho", "vietnamese", "indian", "korean", "asian", "curry"),
    _g("vegetarian", "vegetarian", "vegan", "végétarien", "kasvisravintola", "素食", "齋"),
    _g("fast_food", "fast food", "burger", "burgers", "=snack", "kebab", "hot dog", "=grilli", "快餐", "漢堡"),
    _g("bakery", "bakery", "boulangerie", "pâtisserie", "patisserie", "leipomo", "konditoria", "cake shop",
       "panetteria", "餅店", "餅屋", "西餅", "麵包"),
    _g("ice_cream", "ice cream", "glacier", "gelateria", "gelato", "=glaces", "jäätelö", "雪糕", "冰淇淋"),
    _g("bar", "=bar", "=pub", "cocktail", "=lounge", "wine bar", "=baari", "=olut", "酒吧"),
    _g("convenience", "convenience store", "convenience", "épicerie", "supérette", "=kiosk", "kioski", "便利店",
       "便利商店"),
    _g("supermarket", "supermarket", "supermarché", "hypermarché", "supermercato", "=market", "ruokakauppa",
       "超級市場", "超市", "超級廣場"),
    _g("department_store", "department store", "shopping mall", "=mall", "shopping centre", "grand magasin",
       "centre commercial", "kauppakeskus", "tavaratalo", "百貨", "百货", "商場", "廣場"),
    _g("greengrocer", "greengrocer", "fruits et légumes", "primeur", "fresh fruit", "vegetables", "hedelmä",
       "蔬菜", "鮮果", "生果"),
    _g("market", "=marché", "marketplace", "halles", "kauppahalli", "kauppatori", "=tori", "街市", "市場"),
    _g("pharmacy", "pharmacy", "pharmacie", "farmacia", "=farmacy", "apteekki", "apotek", "drugstore", "藥房",
       "药房", "藥行", "藥局"),
    _g("chemist", "chemist", "parapharmacie", "=drogerie"),
    _g("clinic", "clinic", "clinique", "medical centre", "medical center", "médecin", "cabinet médical", "doctor",
       "lääkäri", "lääkäriasema", "terveysasema", "診所", "醫療中心", "醫務所", "门诊"),
    _g("hospital", "hospital", "hôpital", "ospedale", "sairaala", "centre hospitalier", "urgences", "醫院", "医院"),
    _g("dentist", "dentist", "dentaire", "hammaslääkäri", "牙科"),
    _g("bank", "=bank", "=banque", "=banca", "=pankki", "銀行", "银行"),
    _g("atm", "=atm", "distributeur", "cash", "pankkiautomaatti", "automaatti", "櫃員機", "柜员机", "提款機"),
    _g("exchange", "exchange", "bureau de change", "=change", "找換", "兌換"),
    _g("hotel", "hotel", "hôtel", "hotelli", "=albergo", "酒店", "賓館", "宾馆"),
    _g("hostel", "hostel", "guest house", "auberge", "retkeilymaja", "旅館", "賓舍"),
    _g("post_office", "post office", "=poste", "=posti", "postitoimisto", "郵政局", "郵局", "邮局"),
    _g("school", "=school", "école", "=ecole", "lycée", "collège", "=koulu", "lukio", "primary school",
       "secondary school", "小學", "中學", "学校", "學校"),
    _g("university", "university", "université", "yliopisto", "大學"),
    _g("library", "library", "bibliothèque", "médiathèque", "kirjasto", "biblioteca", "圖書館", "图书馆"),
    _g("bookshop", "bookshop", "bookstore", "librairie", "kirjakauppa", "書店"),
    _g("newsagent", "newsagent", "=presse", "tabac", "=journaux", "報攤"),
    _g("toilets", "toilets", "toilet", "toilettes", "=wc", "restroom", "public toilet", "=lavatory", "käymälä",
       "公廁", "公厕", "洗手間", "厕所"),
    _g("bus_stop", "bus stop", "=bus", "arrêt de bus", "=arrêt", "=autobus", "bussipysäkki", "pysäkki", "巴士站",
       "公交站"),
    _g("bus_station", "bus station", "bus terminus", "gare routière", "linja-autoasema", "巴士總站", "交匯處",
       "interchange"),
    _g("station", "railway station", "train station", "=station", "=gare", "=sncf", "=asema", "rautatieasema",
       "=rautatie", "火車站", "車站"),
    _g("metro", "=metro", "=métro", "subway", "underground", "metroasema", "地鐵", "地铁", "港鐵"),
    _g("tram", "tram stop", "=tram", "raitiovaunu", "ratikka", "電車站"),
    _g("taxi", "=taxi", "=taxis", "taksi", "taxi stand", "的士", "的士站", "出租車"),
    _g("ferry", "ferry", "=port", "=bateau", "terminal croisière", "lautta", "satama", "碼頭", "渡輪"),
    _g("car_rental", "car rental", "location de voitures", "rent a car", "autovuokraamo", "租車"),
    _g("parking", "parking", "car park", "=parc de stationnement", "pysäköinti", "parkkihalli", "=parkki",
       "停車場", "停车场"),
    _g("fuel", "=fuel", "petrol", "station service", "carburant", "=gas", "huoltoasema", "油站", "加油站"),
    _g("cinema", "cinema", "cinéma", "=movies", "elokuvateatteri", "=kino", "戲院", "电影院", "電影"),
    _g("theatre", "theatre", "théâtre", "theater", "teatteri", "=opéra", "劇院"),
    _g("museum", "museum", "musée", "museo", "博物館"),
    _g("gym", "=gym", "fitness", "fitness centre", "salle de sport", "kuntosali", "=kuntokeskus", "健身",
       "健身中心"),
    _g("sports_centre", "sports centre", "=stade", "stadium", "complexe sportif", "urheiluhalli", "體育館"),
    _g("pool", "swimming pool", "piscine", "uimahalli", "=stade nautique", "游泳池"),
    _g("park", "=park", "=parc", "=jardin", "=garden", "=gardens", "=square", "=puisto", "=giardino", "公園",
       "公园", "花園"),
    _g("playground", "playground", "aire de jeux", "leikkipuisto", "leikkikenttä", "遊樂場", "游乐场"),
    _g("toys", "toys", "jouets", "lelut", "玩具"),
    _g("drinking_water", "drinking water", "eau potable", "=fontaine", "juomavesi", "飲水機", "饮水机"),
    _g("phone", "mobile phone", "telephone", "téléphonie", "telecom", "=mobile", "puhelin", "電訊", "手機"),
    _g("electronics", "electronics", "électronique", "電器"),
    _g("clothes", "boutique", "fashion", "=mode", "vêtements", "=vaatteet", "時裝"),
    _g("jewelry", "jewellery", "jewelry", "bijouterie", "joaillerie", "=joaillier", "koru", "珠寶"),
    _g("watches", "horlogerie", "watches", "kello", "鐘錶"),
    _g("optician", "optician", "opticien", "optiikka", "眼鏡"),
    _g("car_dealer", "=motors", "=automobiles", "=garage", "car dealer", "autoliike"),
    _g("estate_agent", "real estate", "immobilier", "=immobiliere", "kiinteistövälitys", "地產", "物業"),
    _g("alcohol", "=cave", "=vins", "wine shop", "caviste", "wine o clock", "=viini", "酒行"),
    _g("hairdresser", "coiffure", "coiffeur", "hairdresser", "hair salon", "kampaamo", "髮型"),
    _g("police", "=police", "commissariat", "=gendarmerie", "poliisi", "警署", "警察"),
    _g("townhall", "mairie", "town hall", "hôtel de ville", "kaupungintalo", "raatihuone", "市政"),
    _g("casino", "=casino", "=casinò"),
    _g("church", "=église", "=eglise", "=church", "cathédrale", "chapelle", "=kirkko", "教堂"),
    _g("information", "tourist information", "office de tourisme", "=information", "=info", "matkailuneuvonta"),
)

# Sign words and chains of German-, Italian- and Swedish-speaking towns and of mainland China, where
# the worlds' signs show OSM's `name` (the name on the ground, in the local language).
LOCAL: tuple[Entry, ...] = (
    _g("pharmacy", "apotheke", "farmacie", "parafarmacia", "药店", "藥店", "大药房"),
    _g("chemist", "drogerie", "drogheria", "=dm", "rossmann", "müller drogerie"),
    _g("bakery", "bäckerei", "backerei", "konditorei", "backhaus", "backstube", "panificio", "forno", "pasticceria",
       "bageri", "konditori", "面包", "烘焙", "糕点"),
    _g("cafe", "=kaffee", "kaffeehaus", "=kafé", "=kafe", "caffetteria", "=caffè", "tchibo"),
    _g("restaurant", "gaststätte", "gasthaus", "gasthof", "wirtshaus", "=imbiss", "=speisen", "restaurang",
       "=lokal", "饭店", "饭馆", "面馆", "餐馆", "小吃"),
    _g("fast_food", "=imbiss", "=döner", "currywurst", "snackbar", "快餐店"),
    _g("ice_cream", "eiscafé", "eiscafe", "eisdiele", "=eis", "gelato", "glass", "冰激凌"),
    _g("bar", "=kneipe", "bierstube", "weinstube", "=enoteca", "=birreria", "=krog"),
    _g("convenience", "=kiosk", "späti", "spätkauf", "=alimentari", "tabaccheria", "=tabacchi", "minimarket",
       "全家", "罗森", "便利"),
    _g("supermarket", "supermarkt", "lebensmittel", "supermercato", "=mercato", "livsmedel",
       "=edeka", "=rewe", "=penny", "=netto", "kaufland", "=migros", "=coop", "=denner", "=conad", "esselunga",
       "=ica", "超市", "超级市场", "生鲜"),
    _g("department_store", "kaufhaus", "warenhaus", "einkaufszentrum", "centro commerciale", "grandi magazzini",
       "varuhus", "köpcentrum", "购物中心", "百货"),
    _g("clinic", "=arzt", "ärzte", "arztpraxis", "praxis", "ambulatorio", "=medico", "vårdcentral", "诊所",
       "卫生院", "门诊部"),
    _g("hospital", "krankenhaus", "klinikum", "=klinik", "spital", "notaufnahme", "pronto soccorso", "sjukhus",
       "=akut", "医院"),
    _g("dentist", "zahnarzt", "zahnärzte", "dentista", "studio dentistico", "tandläkare", "牙医", "口腔"),
    _g("bank", "sparkasse", "volksbank", "raiffeisen", "commerzbank", "deutsche bank", "postbank",
       "kantonalbank", "intesa sanpaolo", "unicredit", "=banken", "工商银行", "建设银行", "农业银行",
       "招商银行"),
    _g("atm", "geldautomat", "bancomat", "=uttagsautomat", "=bankomat", "取款机", "自动柜员机"),
    _g("hotel", "=gasthof", "=pension", "=albergo", "=locanda", "=hotell", "宾馆", "饭店", "旅馆"),
    _g("post_office", "deutsche post", "postfiliale", "postamt", "ufficio postale", "poste italiane",
       "邮政", "中国邮政"),
    _g("school", "=schule", "grundschule", "gymnasium", "=scuola", "=skola", "学校", "小学", "中学"),
    _g("university", "universität", "hochschule", "università", "universitet", "大学"),
    _g("library", "bibliothek", "bücherei", "stadtbibliothek", "biblioteca", "=bibliotek", "图书馆"),
    _g("bookshop", "buchhandlung", "=bücher", "libreria", "bokhandel", "书店"),
    _g("newsagent", "=zeitschriften", "=tabak", "=edicola", "=giornali", "=pressbyrån", "报刊"),
    _g("toilets", "toiletten", "=toilette", "=wc", "servizi igienici", "=bagni", "=toalett", "卫生间", "洗手间",
       "公共厕所"),
    _g("bus_stop", "haltestelle", "bushaltestelle", "fermata", "=hållplats", "公交车站", "公交", "车站"),
    _g("bus_station", "busbahnhof", "zob", "autostazione", "=bussterminal", "公交枢纽", "汽车站"),
    _g("station", "bahnhof", "hauptbahnhof", "=bahn", "stazione", "=ferrovia", "järnvägsstation", "=centralstation",
       "火车站", "高铁站"),
    _g("metro", "u-bahn", "=s-bahn", "metropolitana", "tunnelbana", "地铁站"),
    _g("tram", "straßenbahn", "strassenbahn", "=tram", "spårvagn", "有轨电车"),
    _g("taxi", "taxistand", "=taxi", "出租车", "的士"),
    _g("parking", "parkhaus", "parkplatz", "tiefgarage", "parcheggio", "=parkering", "=garage", "停车场", "停车"),
    _g("fuel", "tankstelle", "=benzina", "distributore", "bensinstation", "加油站"),
    _g("cinema", "=kino", "=cinema", "=bio", "电影院", "影城"),
    _g("theatre", "theater", "teatro", "=teater", "剧院", "大剧院"),
    _g("museum", "=museum", "museo", "=museet", "博物馆", "美术馆"),
    _g("gym", "fitnessstudio", "=fitness", "palestra", "=gym", "健身房"),
    _g("sports_centre", "sporthalle", "sportzentrum", "palazzetto", "=idrottshall", "体育馆", "体育中心"),
    _g("pool", "schwimmbad", "hallenbad", "freibad", "=piscina", "simhall", "=badhus", "游泳馆", "游泳池"),
    _g("park", "=park", "=stadtpark", "=parco", "=giardini", "=parken", "公园"),
    _g("playground", "spielplatz", "parco giochi", "lekplats", "儿童乐园"),
    _g("drinking_water", "trinkwasser", "trinkbrunnen", "=brunnen", "acqua potabile", "=fontanella", "饮水"),
    _g("police", "polizei", "polizia", "carabinieri", "=polis", "派出所", "公安", "警察"),
    _g("townhall", "rathaus", "gemeindeamt", "=municipio", "=comune", "stadshus", "政府"),
    _g("church", "=kirche", "=dom", "=münster", "=chiesa", "=duomo", "=basilica", "=kyrka", "教堂"),
    _g("information", "touristinformation", "=touristeninformation", "informazioni turistiche", "turistbyrå",
       "游客中心", "旅游咨询"),
    _g("hairdresser", "friseur", "=frisör", "parrucchiere", "=barbiere", "理发", "美发"),
    _g("optician", "=optik", "optiker", "=ottica", "眼镜"),
    _g("florist", "blumen", "fioraio", "=fiori", "blomsterhandel", "鲜花"),
    _g("butcher", "metzgerei", "fleischerei", "macelleria", "=slakteri", "肉店"),
    _g("greengrocer", "obst und gemüse", "=gemüse", "frutta e verdura", "=ortofrutta", "frukt och grönt", "水果",
       "果蔬"),
    _g("clothes", "=mode", "bekleidung", "abbigliamento", "=kläder", "服装", "服饰"),
    _g("electronics", "=elektro", "elettronica", "=elektronik", "电器", "数码"),
    _g("phone", "handy", "=telefonia", "=mobil", "手机", "通信", "移动"),
)

ENTRIES: tuple[Entry, ...] = BRANDS + GENERIC + LOCAL
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
FUZZY_RATIO = 0.82  # SequenceMatcher ratio a misread word must reach (one slip in seven letters)
SPANNING_RATIO = 0.9  # ... and a one-word name read over a word break ("Grand Prix" is not "Franprix")
MIN_FUZZY_LEN = 7  # shorter words must be read exactly: "halles" is one slip from "harles"
MIN_PREFIX_LEN = 5  # a word cut off at the image edge ("Pharma") still counts from this length...
MIN_PREFIX_SHARE = 0.6  # ... and this share of the word;
MIN_ELIDED_LEN = 3  # a word the board itself shortened ("Phar…") from this length


def fold(text: str) -> str:
    """Lower-case, accents and punctuation dropped, CJK kept: how signs and aliases are compared."""
    decomposed = unicodedata.normalize("NFKD", text.casefold().replace("&", " and "))
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^\w]+|_", " ", plain).split())


def _bigrams(s: str) -> list[str]:
    return [s[i:i + 2] for i in range(len(s) - 1)]


@dataclass(frozen=True)
class _Alias:
    folded: str
    compact: str  # without spaces
    whole_word: bool
    cjk: bool
    entry: Entry
    bigrams: frozenset[str]


def _alias(raw: str, entry: Entry) -> _Alias:
    folded = fold(raw.lstrip("="))
    compact = folded.replace(" ", "")
    cjk = bool(_CJK.search(folded))
    whole_word = raw.startswith("=") or (len(compact) < 5 and not cjk)
    return _Alias(folded, compact, whole_word, cjk, entry, frozenset(_bigrams(compact)))


_ALIASES: tuple[_Alias, ...] = tuple(a for e in ENTRIES for a in (_alias(r, e) for r in e.aliases) if a.compact)


@dataclass(frozen=True)
class _Text:
    folded: str
    compact: str
    tokens: tuple[str, ...]
    starts: tuple[int, ...]  # where each token begins in `compact`
    elided: frozenset[str]  # tokens followed by an ellipsis
    bigrams: frozenset[str]

    @classmethod
    def of(cls, text: str) -> _Text:
        folded = fold(text)
        compact = folded.replace(" ", "")
        tokens = tuple(folded.split())
        starts = tuple(int(n) for n in np.cumsum([0, *map(len, tokens)])[:-1])
        elided = frozenset(t for raw in re.findall(r"(\w+)\s*(?:…|\.\.)", text) for t in fold(raw).split()[-1:])
        return cls(folded, compact, tokens, starts, elided, frozenset(_bigrams(compact)))


def mentions(text: str, phrase: str, whole_word: bool = False) -> bool:
    """Does a (possibly misread) sign text contain `phrase`? Short phrases must be read exactly."""
    return _matches(_Text.of(text), _alias(("=" if whole_word else "") + phrase, _NO_ENTRY))


def _matches(text: _Text, alias: _Alias) -> bool:
    if not text.compact or not alias.compact:
        return False
    if alias.cjk:
        return alias.compact in text.compact
    if f" {alias.folded} " in f" {text.folded} ":
        return True
    if alias.whole_word:
        return False
    if alias.compact in text.compact:  # glued words, compounds ("sanomakahvila"), longer names
        return True
    n = len(alias.compact)
    if " " not in alias.folded:
        for t in text.tokens:
            shortest = MIN_ELIDED_LEN if t in text.elided else max(MIN_PREFIX_LEN, MIN_PREFIX_SHARE * n)
            if len(t) >= shortest and alias.compact.startswith(t):
                return True  # cut off at the frame edge, or shortened on the board
    if n < MIN_FUZZY_LEN or len(alias.bigrams & text.bigrams) < 0.5 * (n - 1):
        return False  # most pairs of letters are missing: no reading of the text comes close
    return _fuzzy_match(alias.compact, text.compact, text.starts, " " not in alias.folded)


def _fuzzy_match(needle: str, hay: str, starts: tuple[int, ...], one_word: bool) -> bool:
    """Does a window of `hay` about as long as `needle`, beginning at a word (or one letter into it,
    for a lost first letter), read like it? A one-word needle read over a word break must read
    closer: OCR glues and splits words, but most near-misses across words are other words."""
    n = len(needle)
    breaks = set(starts[1:]) if one_word else set()
    for start in sorted({s + k for s in starts for k in (0, 1)}):
        for size in (n - 1, n, n + 1):
            if start + size <= len(hay) or start == 0:
                window = hay[start:start + size]
                spans = any(start < b < start + len(window) for b in breaks)
                ratio = SequenceMatcher(None, needle, window, autojunk=False).ratio()
                if ratio >= (SPANNING_RATIO if spans else FUZZY_RATIO):
                    return True
    return False


_NO_ENTRY = Entry("", "restaurant", ())


@lru_cache(maxsize=8192)
def lookup(text: str) -> tuple[Entry, ...]:
    """Entries a sign text shows, brands first, each once; empty when the lexicon knows none."""
    seen = _Text.of(text)
    found: list[Entry] = []
    for alias in _ALIASES:
        if alias.entry not in found and _matches(seen, alias):
            found.append(alias.entry)
    # A brand that is also a generic word ("Subway", "Casino") keeps only the more specific reading.
    kinds = {e.kind for e in found if e.brand}
    return tuple(e for e in found if e.brand or e.kind not in kinds)


def kinds(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e.kind for e in lookup(text)))


def classes(text: str) -> frozenset[str]:
    """OSM classes of every kind the text names."""
    return frozenset(c for e in lookup(text) for c in e.classes)


@lru_cache(maxsize=8192)
def expand(text: str) -> str:
    """A sentence for the embedder: the text, then what the lexicon knows it to be and offer."""
    text = " ".join(text.split())
    entries = lookup(text)
    if not entries:
        return text
    return f"{text}: " + "; ".join(dict.fromkeys(e.describe() for e in entries))
